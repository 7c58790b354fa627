// Package steplog reads a serving engine's own log of its forward passes (engine steps) and
// reports, per cell of a finished run, whether the server really ran the requested batch and
// how long its forward passes took: the server-side check of what genload measures from the
// client.
//
// A log is read with a Format — a regular expression with named groups, or a named preset for
// a known server — into Records, each the time of a line and the figures its groups captured.
// Records are aligned to cells by time (a record belongs to the cell whose [start, end) span
// holds it) and summarised per cell by Attain: the modal active occupancy, the share of
// forward passes at the cell's batch size B, whether the occupancy ever went above B, and the
// mean and CV of the forward-pass time over the steps at exactly B.
//
// Reading never stops at a bad line: every line that looks like a record (it holds the
// format's marker) but does not parse becomes a LineError naming file:line, and the counts of
// lines read, records and other lines are kept, so nothing is lost silently. Follow reads a
// file that a rotator may truncate or replace while it is read.
package steplog

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Group names a Format's regular expression may define. Group "time" and "active" are
// required; the others are optional.
const (
	// GroupTime is the record's timestamp; see ParseTime for the accepted forms.
	GroupTime = "time"
	// GroupActive is the number of sequences in the forward pass (or, for a periodic
	// sample, the running requests), an integer.
	GroupActive = "active"
	// GroupFwdMs is the forward pass's duration in milliseconds, a decimal number.
	GroupFwdMs = "fwd_ms"
	// GroupDecode is how many of the active sequences decode in the step, an integer; with
	// it, records with decode = 0 (prefill only) are not counted as forward passes.
	GroupDecode = "decode"
)

// Format says how to find records in a log.
type Format struct {
	// Name is the preset's name, or "regex" for a user expression.
	Name string
	// Re finds records; each match is one record (a line may hold several when writers
	// interleave). It must define the groups "time" and "active".
	Re *regexp.Regexp
	// Marker is a literal that every record holds once: a line with more markers than
	// matches holds a malformed record (a LineError). "" means every line that does not
	// match is another kind of line.
	Marker string
	// Sample is true when a record is a periodic sample of the engine's state rather than
	// one forward pass (vLLM's stats lines): the shares are then of samples.
	Sample bool
	// FwdNote says what the format's fwd_ms measures when that is not the server's forward
	// time alone ("" when it is); see Notes.
	FwdNote string
}

// Preset formats, by name. Each doc comment cites the server source that writes the line.
var presets = map[string]Format{
	// genload: the built-in engine's step log (genload serve --step-log FILE, engine
	// Config.StepLog): "time=2026-12-01T10:00:00.123456Z step=7 active=64 decode=64
	// decoding=64 … fwd_ms=… wall_ms=…". The decode group is the line's decoding= (sequences
	// with output decoding their next token; its decode= also counts 1-token prefill rests),
	// and fwd_ms is the line's wall_ms — the step's measured wall duration, what a client on
	// this machine measures (the line's own fwd_ms is the simulated time before the engine's
	// time scale).
	"genload": {
		Name:    "genload",
		Re:      regexp.MustCompile(`time=(?P<time>\S+) step=\d+ active=(?P<active>\d+) decode=\d+ decoding=(?P<decode>\d+) (?:[a-z_]+=[\d.]+ )*?wall_ms=(?P<fwd_ms>\d+(?:\.\d+)?)`),
		Marker:  "time=",
		FwdNote: "fwd is each step's measured wall time on the engine's host (wall_ms): its CV is the host's sleep jitter on top of the injected noise, not the noise alone (the line's fwd_ms is the simulated time)",
	},
	// active-fwd: one line per forward pass holding "active=N" and "fwd=Xms" after an
	// ISO-8601 timestamp ("2026-12-01 10:00:00.123 … active=64 … fwd=12.3ms"), the form of an
	// instrumented engine's per-step debug line.
	"active-fwd": {
		Name:   "active-fwd",
		Re:     regexp.MustCompile(`(?P<time>\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?)\S*\s.*?\bactive=(?P<active>\d+)\b.*?\bfwd=(?P<fwd_ms>\d+(?:\.\d+)?)ms`),
		Marker: "active=",
	},
	// sglang: SGLang's decode statistics line, written every --decode-log-interval decode
	// steps (default 40) by log_decode_stats in python/sglang/srt/managers/scheduler.py
	// (sgl-project/sglang): "Decode batch. #running-req: 64, #token: …, token usage: …, …",
	// behind the prefix of configure_logger in python/sglang/srt/utils.py,
	// "[%(asctime)s{prefix}] " with datefmt "%Y-%m-%d %H:%M:%S" (local time, whole seconds;
	// prefix e.g. " TP0"). The line carries no forward-pass time (its gen throughput averages
	// the last interval), so there is no fwd_ms.
	"sglang": {
		Name:   "sglang",
		Re:     regexp.MustCompile(`\[(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)[^\]]*\] Decode batch[^#]*#running-req: (?P<active>\d+)`),
		Marker: "Decode batch",
	},
	// vllm: vLLM's periodic stats line, LoggingStatLogger.log in vllm/v1/metrics/loggers.py
	// (vllm-project/vllm): "Engine 000: Avg prompt throughput: … tokens/s, Avg generation
	// throughput: … tokens/s, Running: 64 reqs, Waiting: 0 reqs, GPU KV cache usage: …%,
	// Prefix cache hit rate: …%", logged every few seconds, behind vllm/logger.py's prefix
	// "%(levelname)s %(asctime)s [%(filename)s:%(lineno)d] " with _DATE_FORMAT
	// "%m-%d %H:%M:%S" (local time, no year, whole seconds). Each record is a sample of the
	// running requests, not a forward pass; there is no fwd_ms.
	"vllm": {
		Name:   "vllm",
		Re:     regexp.MustCompile(`(?P<time>\d\d-\d\d \d\d:\d\d:\d\d)(?:\.\d+)?\s.*?Avg prompt throughput: .*?Running: (?P<active>\d+) reqs`),
		Marker: "Avg prompt throughput",
		Sample: true,
	},
}

// PresetNames lists the preset formats, sorted.
func PresetNames() []string {
	names := make([]string, 0, len(presets))
	for n := range presets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Preset returns the preset format called name (see PresetNames); the error lists the known
// ones.
func Preset(name string) (Format, error) {
	f, ok := presets[name]
	if !ok {
		return Format{}, fmt.Errorf("step-log preset %q: unknown (known: %s)", name, strings.Join(PresetNames(), ", "))
	}
	return f, nil
}

// NewFormat compiles a user expression with named groups (see the Group constants; "time"
// and "active" are required) and an optional marker (see Format.Marker). Errors name the
// missing or unknown group.
func NewFormat(expr, marker string) (Format, error) {
	re, err := regexp.Compile(expr)
	if err != nil {
		return Format{}, fmt.Errorf("step-log regex: %w", err)
	}
	f := Format{Name: "regex", Re: re, Marker: marker}
	return f, f.check()
}

func (f Format) check() error {
	names := f.Re.SubexpNames()
	var errs []error
	for _, g := range []string{GroupTime, GroupActive} {
		if !slices.Contains(names, g) {
			errs = append(errs, fmt.Errorf("step-log regex: no (?P<%s>…) group", g))
		}
	}
	for _, n := range names {
		switch n {
		case "", GroupTime, GroupActive, GroupFwdMs, GroupDecode:
		default:
			errs = append(errs, fmt.Errorf("step-log regex: unknown group (?P<%s>…) (known: time, active, fwd_ms, decode)", n))
		}
	}
	return errors.Join(errs...)
}

// HasFwd reports whether records carry a forward-pass time.
func (f Format) HasFwd() bool { return f.Re.SubexpIndex(GroupFwdMs) >= 0 }

// HasDecode reports whether the format says how many sequences of a step decode.
func (f Format) HasDecode() bool { return f.Re.SubexpIndex(GroupDecode) >= 0 }

// Notes are what a reader of the per-cell forward-pass figures of this format must know:
// FwdNote, and, for a format with fwd_ms but no decode group, that the steps at B that also
// prefill (a sequence's first step, a chunk of a long prompt) are among the forwards at B and
// in their mean and CV, longer by their prefill work.
func (f Format) Notes() []string {
	var n []string
	if f.FwdNote != "" {
		n = append(n, f.FwdNote)
	}
	if f.HasFwd() && !f.HasDecode() {
		n = append(n, "the format has no decode group: steps at B that also prefill are counted in fwd at B (their mean and CV include the prefill work)")
	}
	return n
}
