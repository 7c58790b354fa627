package chart

import (
	"math"
	"strings"
	"testing"

	"gonum.org/v1/plot"
)

func TestBatchTicks(t *testing.T) {
	// The default batch sizes: powers of two always labelled; 3, 5, 6, 12, 48 are ≥ 0.2 log₂
	// from every label; 7 is log₂(8/7) = 0.19 from 8, so it keeps its tick without a label.
	ticks := batchTicks([]int{1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 32, 48, 64})
	var labels []string
	for _, tk := range ticks {
		labels = append(labels, tk.Label)
	}
	if got := strings.Join(labels, ","); got != "1,2,3,4,5,6,,8,12,16,32,48,64" {
		t.Errorf("labels %s", got)
	}
	lt := LogTicks125{}.Ticks(0.15, 12)
	var ll []string
	for _, tk := range lt {
		if tk.Label != "" {
			ll = append(ll, tk.Label)
		}
	}
	if got := strings.Join(ll, ","); got != "0.2,0.5,1,2,5,10" {
		t.Errorf("log ticks %s", got)
	}
}

// ValueAxis: log past a 20× span of positive values, else linear through 0 with 8 % of room
// past the data (1 when all are 0), below 0 as above; NiceTicks labels round steps with the
// decimals they need.
func TestValueAxisAndNiceTicks(t *testing.T) {
	for _, c := range []struct {
		lo, hi, min, max float64
		log              bool
	}{
		{1, 40, 1 / 1.15, 46, true},
		{2, 30, 0, 32.4, false},
		{0, 0, 0, 1, false},
		{-50, 10, -54.8, 14.8, false},
	} {
		p := plot.New()
		log := ValueAxis(&p.Y, c.lo, c.hi)
		if log != c.log || math.Abs(p.Y.Min-c.min) > 1e-9 || math.Abs(p.Y.Max-c.max) > 1e-9 {
			t.Errorf("ValueAxis(%g, %g): log %v, [%g, %g]; want %v, [%g, %g]", c.lo, c.hi, log, p.Y.Min, p.Y.Max, c.log, c.min, c.max)
		}
	}
	labels := func(lo, hi float64) string {
		var l []string
		for _, tk := range (NiceTicks{}).Ticks(lo, hi) {
			if tk.Label != "" {
				l = append(l, tk.Label)
			}
		}
		return strings.Join(l, " ")
	}
	for _, c := range []struct {
		lo, hi float64
		want   string
	}{{0, 1.5, "0.0 0.2 0.4 0.6 0.8 1.0 1.2 1.4"}, {-54.8, 14.8, "-50 -40 -30 -20 -10 0 10"}, {0, 1.9, "0.00 0.25 0.50 0.75 1.00 1.25 1.50 1.75"}, {0, 180, "0 25 50 75 100 125 150 175"}} {
		if got := labels(c.lo, c.hi); got != c.want {
			t.Errorf("NiceTicks(%g, %g) = %q, want %q", c.lo, c.hi, got, c.want)
		}
	}
}
