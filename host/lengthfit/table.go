package lengthfit

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Table is a quantile table of lengths in the form the SDK's empirical length plugin
// (sdk/examples/empirical) reads as its config: bin edges in tokens, strictly ascending, and
// the number of lengths in each bin. The edges are the sample's nearest-rank quantiles at
// j/bins, j = 0 … bins (the first the smallest length, the last the largest); edges that
// coincide (many equal lengths) are merged, so a table may have fewer bins than asked. Counts
// are the lengths in [e_j, e_{j+1}) (the last bin closed), so they sum to the sample size.
//
// The plugin reads the table as a piecewise-uniform density, whose quantile function is
//
//	Q(p) = e_j + (p·Σc − C_j) / c_j · (e_{j+1} − e_j),   C_j = Σ_{i<j} c_i ≤ p·Σc < C_{j+1}
//
// (the same formula as [Table.Quantile]), and rescales the B values it takes to the cell's
// mean L.
type Table struct {
	Edges  []float64
	Counts []float64
	cum    []float64 // cum[j] = Σ_{i<j} Counts[i]
}

// NewTable makes the table of sorted (ascending, at least two distinct values) with at most
// bins bins.
func NewTable(sorted []float64, bins int) Table {
	n := len(sorted)
	var edges []float64
	for j := 0; j <= bins; j++ {
		k := int(math.Ceil(float64(j) / float64(bins) * float64(n)))
		e := sorted[min(max(k-1, 0), n-1)]
		if len(edges) == 0 || e > edges[len(edges)-1] {
			edges = append(edges, e)
		}
	}
	t := Table{Edges: edges, Counts: make([]float64, len(edges)-1)}
	for _, x := range sorted {
		j := sort.Search(len(edges), func(j int) bool { return edges[j] > x }) - 1
		t.Counts[min(max(j, 0), len(t.Counts)-1)]++
	}
	t.cum = make([]float64, len(edges))
	for j, c := range t.Counts {
		t.cum[j+1] = t.cum[j] + c
	}
	return t
}

// bin returns the bin of x, or −1 outside [e_0, e_last].
func (t *Table) bin(x float64) int {
	if x < t.Edges[0] || x > t.Edges[len(t.Edges)-1] {
		return -1
	}
	j := sort.Search(len(t.Edges), func(j int) bool { return t.Edges[j] > x }) - 1
	return min(j, len(t.Counts)-1)
}

// LogProb is the log density of the piecewise-uniform distribution at x (1/token): −Inf
// outside the table or in an empty bin.
func (t *Table) LogProb(x float64) float64 {
	j := t.bin(x)
	if j < 0 || t.Counts[j] == 0 {
		return math.Inf(-1)
	}
	return math.Log(t.Counts[j] / (t.cum[len(t.cum)-1] * (t.Edges[j+1] - t.Edges[j])))
}

// CDF is the piecewise-linear CDF of the table.
func (t *Table) CDF(x float64) float64 {
	switch {
	case x <= t.Edges[0]:
		return 0
	case x >= t.Edges[len(t.Edges)-1]:
		return 1
	}
	j := t.bin(x)
	return (t.cum[j] + t.Counts[j]*(x-t.Edges[j])/(t.Edges[j+1]-t.Edges[j])) / t.cum[len(t.cum)-1]
}

// Quantile is Q(p) of the type documentation, p in [0, 1).
func (t *Table) Quantile(p float64) float64 {
	total := t.cum[len(t.cum)-1]
	target := p * total
	j := sort.Search(len(t.cum)-1, func(j int) bool { return t.cum[j+1] > target })
	if j >= len(t.cum)-1 {
		return t.Edges[len(t.Edges)-1]
	}
	return t.Edges[j] + (target-t.cum[j])/t.Counts[j]*(t.Edges[j+1]-t.Edges[j])
}

// EmpiricalWasm is the plugin path a written table names: a path, which genload resolves
// relative to the folder of the TOML file holding it (bench.toml, or the table file itself
// for genload lengths -c), so that the plugin is found wherever genload is run from and
// however it was installed.
const EmpiricalWasm = "empirical.wasm"

// WriteTOML writes the table as bench.toml's [lengths] table for the empirical plugin
// ([EmpiricalWasm]), with comment lines (each prefixed "# ") before it.
func (t *Table) WriteTOML(w io.Writer, comment []string) error {
	var b strings.Builder
	for _, c := range comment {
		b.WriteString("# " + c + "\n")
	}
	b.WriteString("[lengths]\nplugin = \"" + EmpiricalWasm + "\"    # sdk/examples/empirical built to this path (relative to this file's folder)\n")
	b.WriteString("[lengths.config]\nmode = \"quantiles\"\n")
	b.WriteString("edges = " + floats(t.Edges) + "\n")
	b.WriteString("counts = " + floats(t.Counts) + "\n")
	_, err := io.WriteString(w, b.String())
	if err != nil {
		return fmt.Errorf("quantile table: %w", err)
	}
	return nil
}

// floats writes a TOML array of numbers, integers without a decimal point.
func floats(v []float64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = strconv.FormatFloat(x, 'f', -1, 64)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
