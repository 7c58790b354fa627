// Package perf is the harness behind `make perf` (PERF.md): it compiles the test binaries of
// the packages whose Go benchmarks measure genload's own costs, runs them in interleaved rounds
// (each benchmark runs genload's code path and its baselines in one process, one after the
// other), keeps every metric of every round, and reduces them to one table of ratios: each row
// is a figure of genload's real code path, a baseline measured in the same process and round,
// the per-round ratio as median [min–max] over the rounds, the row's goal and pass/miss.
//
// Medians are over rounds (benchstat style); ratios are paired per round (genload and its
// baseline ran seconds apart in the same process), which cancels most of the machine's slow
// drift in load. Nothing here is a test: the goals are checked by reading the table.
package perf

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/genload/genload/host/stats"
)

// Result is one line of `go test -bench` output.
type Result struct {
	// Name is the benchmark name without its -GOMAXPROCS suffix, e.g.
	// "BenchmarkChunkCost/genload/C=1/N=1000".
	Name string
	// Iters is b.N.
	Iters int
	// Metrics maps a unit ("ns/op", "allocs/op", "cpu-ns/chunk", "p50-µs", …) to its value.
	Metrics map[string]float64
}

var procSuffix = regexp.MustCompile(`-\d+$`)

// ParseBench reads `go test -bench` output and returns its benchmark lines in order; other lines
// (goos, PASS, logs) are skipped. A line is "Name-P  N  v1 unit1  v2 unit2 …". It returns an
// error naming the line number when a benchmark line has an odd value/unit list or a value that
// is not a number.
func ParseBench(r io.Reader) ([]Result, error) {
	var out []Result
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		f := strings.Fields(sc.Text())
		if len(f) < 2 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		n, err := strconv.Atoi(f[1])
		if err != nil {
			continue // a log line that starts with a benchmark name
		}
		if len(f)%2 != 0 {
			return nil, fmt.Errorf("bench output line %d: odd number of value/unit fields: %q", line, sc.Text())
		}
		res := Result{Name: procSuffix.ReplaceAllString(f[0], ""), Iters: n, Metrics: map[string]float64{}}
		for i := 2; i < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("bench output line %d: value %q of unit %q: %w", line, f[i], f[i+1], err)
			}
			res.Metrics[f[i+1]] = v
		}
		out = append(out, res)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("bench output line %d: %w", line, err)
	}
	return out, nil
}

// Samples holds every metric of every round: Samples[key][round], key = Key(name, unit). A round
// whose run failed or did not report the metric holds NaN.
type Samples struct {
	Rounds int
	m      map[string][]float64
}

// NewSamples returns an empty set for rounds rounds.
func NewSamples(rounds int) *Samples { return &Samples{Rounds: rounds, m: map[string][]float64{}} }

// Key joins a benchmark name and a unit: "BenchmarkX/a|ns/op".
func Key(name, unit string) string { return name + "|" + unit }

// Add records value v of key in round r (0-based); out-of-range rounds are ignored.
func (s *Samples) Add(key string, r int, v float64) {
	if r < 0 || r >= s.Rounds {
		return
	}
	xs, ok := s.m[key]
	if !ok {
		xs = make([]float64, s.Rounds)
		for i := range xs {
			xs[i] = math.NaN()
		}
		s.m[key] = xs
	}
	xs[r] = v
}

// AddResults records every metric of rs in round r.
func (s *Samples) AddResults(r int, rs []Result) {
	for _, res := range rs {
		for u, v := range res.Metrics {
			s.Add(Key(res.Name, u), r, v)
		}
	}
}

// Get returns the per-round values of key (NaN where missing), or nil if it was never seen.
func (s *Samples) Get(key string) []float64 { return s.m[key] }

// Keys returns every recorded key, sorted.
func (s *Samples) Keys() []string {
	ks := make([]string, 0, len(s.m))
	for k := range s.m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// Stat is a median with the range of the values it summarises.
type Stat struct {
	Median, Min, Max float64
	// N is how many values (NaN excluded) it summarises; 0 means no data (all fields NaN).
	N int
}

// Summarize returns the median [min–max] of xs, NaN values skipped. The median of an even count
// is the mean of the two middle values (as benchstat).
func Summarize(xs []float64) Stat {
	v := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return Stat{math.NaN(), math.NaN(), math.NaN(), 0}
	}
	slices.Sort(v)
	n := len(v)
	return Stat{Median: stats.Median(v), Min: v[0], Max: v[n-1], N: n}
}

// Ratios returns a[r]/b[r] per round (NaN where either is missing or b is 0).
func Ratios(a, b []float64) []float64 {
	out := make([]float64, max(len(a), len(b)))
	for i := range out {
		out[i] = math.NaN()
		if i < len(a) && i < len(b) && b[i] != 0 && !math.IsNaN(a[i]) && !math.IsNaN(b[i]) {
			out[i] = a[i] / b[i]
		}
	}
	return out
}

// Map applies f to every value of xs (NaN stays NaN).
func Map(xs []float64, f func(float64) float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}
