// Package procstat reads the machine's CPU time from the aggregate "cpu" line of Linux's
// /proc/stat (proc(5)), in jiffies (USER_HZ, 1/100 s): how busy the whole machine was over an
// interval, and how much of it the hypervisor took from this guest (steal), which a benchmark
// of sub-millisecond timing reports beside its figures.
package procstat

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// CPU is the aggregate CPU time of every CPU since boot, in jiffies.
type CPU struct {
	// Total is the sum of every field of the line: user, nice, system, idle, iowait, irq,
	// softirq, steal (guest and guest_nice are already inside user and nice).
	Total uint64
	// Busy is Total − idle − iowait: running anything, or stolen.
	Busy uint64
	// Steal is the time the hypervisor ran another guest while this one had work.
	Steal uint64
}

// Read returns the machine's CPU time from /proc/stat; the error names the file and, for a
// first line it cannot read, the line.
func Read() (CPU, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return CPU{}, err
	}
	return parse(b)
}

// parse reads the "cpu" line at the start of a /proc/stat text.
func parse(b []byte) (CPU, error) {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := bytes.Fields(line)
	if len(f) < 6 || string(f[0]) != "cpu" {
		return CPU{}, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var c CPU
	var idle uint64
	for i, x := range f[1:] {
		if i >= 8 { // guest, guest_nice: counted in user and nice already
			break
		}
		v, err := strconv.ParseUint(string(x), 10, 64)
		if err != nil {
			return CPU{}, fmt.Errorf("/proc/stat: field %d of %q: %w", i+2, line, err)
		}
		c.Total += v
		switch i {
		case 3, 4: // idle, iowait
			idle += v
		case 7:
			c.Steal = v
		}
	}
	c.Busy = c.Total - idle
	return c, nil
}

// Since returns, over the interval from c0 to c, the machine's busy CPU in cores (busy share
// × cores) and the share of its CPU time the hypervisor stole (0–1); 0, 0 when no jiffy
// passed.
func (c CPU) Since(c0 CPU, cores int) (busyCores, stealShare float64) {
	dt := float64(c.Total - c0.Total)
	if dt <= 0 {
		return 0, 0
	}
	return float64(cores) * float64(c.Busy-c0.Busy) / dt, float64(c.Steal-c0.Steal) / dt
}
