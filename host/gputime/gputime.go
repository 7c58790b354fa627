// Package gputime accounts for the GPU time a run spent: the measured wall time of each cell,
// of its warmup and of its measured request(s), summed per run and multiplied by the GPUs
// the server holds. It reads finished results (results.Run) and nothing else.
//
// GPU time is wall time × GPUs: the server's GPUs are held for the whole run whether a
// forward pass runs or not, so the cost of a run is its wall time, and the cost of a cell
// the wall time from its start to its end. The warmup and measured figures split a cell's
// time into the parts a protocol can save: a warmup per repeat is overhead, the measured
// requests are the measurement.
package gputime

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/genload/genload/host/results"
)

// Cell is one cell's accounting (wall times; multiply by GPUs for GPU time).
type Cell struct {
	// RunID is the run the record is of (its header's run id); Repeat the record's repeat
	// in a run with repeats (0, absent, otherwise): with several runs or repeats, the rows
	// of one cell are told apart by them.
	RunID  string `json:"run_id"`
	Repeat int    `json:"repeat,omitempty"`
	// Key is the cell's "L=…,B=…"; Status its record's status.
	Key    string `json:"cell"`
	Status string `json:"status"`
	// Wall is the cell's measured wall time, start to record (results.Cell.Elapsed).
	Wall time.Duration `json:"wall_ns"`
	// Warmup and Measured are the wall time of its warmup and of its measured request(s)
	// (results.Cell.WarmupElapsed, MeasuredElapsed); zero when the record has none.
	Warmup   time.Duration `json:"warmup_ns"`
	Measured time.Duration `json:"measured_ns"`
}

// Account is a run's (or several runs') accounting.
type Account struct {
	// Cells are the cells' rows, in the runs' order.
	Cells []Cell `json:"cells"`
	// Runs is the number of runs summed; RunWall the sum of their wall times
	// (results.Footer.Elapsed; runs without a footer, i.e. killed, count their cells' wall).
	Runs    int           `json:"runs"`
	RunWall time.Duration `json:"run_wall_ns"`
	// CellWall, Warmup and Measured sum the cells' figures.
	CellWall time.Duration `json:"cell_wall_ns"`
	Warmup   time.Duration `json:"warmup_ns"`
	Measured time.Duration `json:"measured_ns"`
	// Split is true when every cell record has its warmup and measured times; else
	// SplitReason says which do not (records written before they were kept).
	Split       bool   `json:"split"`
	SplitReason string `json:"split_reason,omitempty"`
	// GPUs is the GPU count the times are multiplied by in GPUHours, and GPUSource where it
	// came from ("labels gpu_count", "flag", or "" when unknown: GPUHours is then per GPU).
	GPUs      int    `json:"gpus"`
	GPUSource string `json:"gpu_source,omitempty"`
	// TimeScale is the built-in engine's time scale when every run was against it (0
	// otherwise): its times are wall-clock at that scale, and the simulated GPU time is
	// the wall time / TimeScale.
	TimeScale float64 `json:"time_scale,omitempty"`
}

// Of accounts for runs with gpus GPUs (0 = unknown: GPU-hours are then given per GPU), from
// source ("labels gpu_count", "flag").
func Of(runs []*results.Run, gpus int, source string) Account {
	a := Account{Runs: len(runs), Split: true, GPUs: gpus, GPUSource: source}
	if gpus <= 0 {
		a.GPUs, a.GPUSource = 1, ""
	}
	a.TimeScale = builtinTimeScale(runs)
	missing := 0
	for _, r := range runs {
		var cells time.Duration
		for _, c := range r.Cells {
			row := Cell{RunID: r.Header.RunID, Repeat: c.Repeat, Key: c.Cell.Key(), Status: c.Status, Wall: time.Duration(c.Elapsed),
				Warmup: time.Duration(c.WarmupElapsed), Measured: time.Duration(c.MeasuredElapsed)}
			a.Cells = append(a.Cells, row)
			cells += row.Wall
			a.Warmup += row.Warmup
			a.Measured += row.Measured
			if row.Measured == 0 && results.Measured(c.Status) {
				missing++
			}
		}
		a.CellWall += cells
		if r.Footer != nil {
			a.RunWall += time.Duration(r.Footer.Elapsed)
		} else {
			a.RunWall += cells
		}
	}
	if missing > 0 {
		a.Split = false
		a.SplitReason = fmt.Sprintf("%d measured cell records have no warmup_ms/measured_ms (the run did not record them)", missing)
	}
	return a
}

// builtinTimeScale is the time scale of the built-in engine the runs measured, or 0 when
// any of them was against another server, or they ran at different scales.
func builtinTimeScale(runs []*results.Run) float64 {
	scale := 0.0
	for i, r := range runs {
		ts, _ := r.Header.Engine["time_scale"].(float64)
		if r.Header.TargetKind != "builtin" || ts <= 0 || (i > 0 && ts != scale) {
			return 0
		}
		scale = ts
	}
	return scale
}

// GPUHours returns d × GPUs in hours.
func (a Account) GPUHours(d time.Duration) float64 { return d.Hours() * float64(a.GPUs) }

// GPUCount reads the gpu_count label (an integer: int64 from TOML, a whole float64 from
// JSON, or a decimal string); ok is false when it is absent or not a positive integer.
func GPUCount(labels map[string]any) (n int, ok bool) {
	switch v := labels["gpu_count"].(type) {
	case int64:
		n = int(v)
	case int:
		n = v
	case float64:
		if v != math.Trunc(v) {
			return 0, false
		}
		n = int(v)
	case string:
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			return 0, false
		}
	default:
		return 0, false
	}
	return n, n > 0
}

// WriteSummary writes the run-level accounting in two or three lines, each within 120
// columns for runs of up to days: wall and GPU time of the runs and cells, on the built-in
// engine what its time scale makes of them, and the warmup / measured split (or why it is
// absent).
func (a Account) WriteSummary(w io.Writer) {
	per := fmt.Sprintf("× %d GPUs (%s)", a.GPUs, a.GPUSource)
	if a.GPUSource == "" {
		per = "per GPU (no gpu_count label)"
	}
	runs := fmt.Sprintf("%d runs", a.Runs)
	if a.Runs == 1 {
		runs = "1 run"
	}
	fmt.Fprintf(w, "GPU time %s: %s %s wall = %s GPU-h; cells %s = %s GPU-h\n",
		per, runs, dur(a.RunWall), a.gpuh(a.RunWall), dur(a.CellWall), a.gpuh(a.CellWall))
	switch {
	case a.TimeScale == 1:
		fmt.Fprintln(w, "(the built-in engine at time scale 1: its wall-clock times are the simulated GPU time)")
	case a.TimeScale > 0:
		fmt.Fprintf(w, "(built-in engine at time scale %g: times are wall-clock; ×%g gives the simulated %s GPU-h of the %s)\n",
			a.TimeScale, 1/a.TimeScale, hours(a.GPUHours(a.RunWall)/a.TimeScale), map[bool]string{true: "run", false: "runs"}[a.Runs == 1])
	}
	if !a.Split {
		fmt.Fprintf(w, "no warmup / measured split: %s\n", a.SplitReason)
		return
	}
	fmt.Fprintf(w, "warmups %s = %s GPU-h (%.1f %% of cells); measured requests %s = %s GPU-h (%.1f %%)\n",
		dur(a.Warmup), a.gpuh(a.Warmup), pct(a.Warmup, a.CellWall),
		dur(a.Measured), a.gpuh(a.Measured), pct(a.Measured, a.CellWall))
}

// dur is d to the millisecond, or to the second from an hour on ("1m9.5s", "500h0m0s").
func dur(d time.Duration) time.Duration {
	if d >= time.Hour {
		return d.Round(time.Second)
	}
	return d.Round(time.Millisecond)
}

// gpuh is d's GPU-hours as [hours] writes them.
func (a Account) gpuh(d time.Duration) string { return hours(a.GPUHours(d)) }

// hours is h with 4 decimals below 100 ("0.0123"), with 1 from 100 on ("4000.0"), and
// "<0.0001" for a time above 0 that 4 decimals would print as zero.
func hours(h float64) string {
	switch {
	case h >= 100:
		return strconv.FormatFloat(h, 'f', 1, 64)
	case h > 0 && h < 0.00005:
		return "<0.0001"
	}
	return strconv.FormatFloat(h, 'f', 4, 64)
}

// Hours is hours for other packages' texts (the report's summary).
func Hours(h float64) string { return hours(h) }

func pct(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}
