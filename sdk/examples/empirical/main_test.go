package main

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/genload/genload/sdk/lengths"
)

func TestQuantile(t *testing.T) {
	// Two bins: [0,100) holds 1 prompt, [100,300) holds 3; total 4.
	h, err := newHistogram(config{Edges: []float64{0, 100, 300}, Counts: []float64{1, 3}})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ p, want float64 }{
		{0, 0},
		{0.125, 50},                    // target 0.5 of bin 0's 1 → halfway through [0,100)
		{0.25, 100},                    // exactly the end of bin 0
		{0.625, 200},                   // target 2.5: 1.5 of bin 1's 3 → halfway through [100,300)
		{0.999, 100 + (3.996-1)/3*200}, // ≈ 299.73
	}
	for _, c := range cases {
		if got := h.quantile(c.p); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("Q(%v) = %v, want %v", c.p, got, c.want)
		}
	}
}

func TestLengths(t *testing.T) {
	h, _ := newHistogram(config{Edges: []float64{0, 100, 300}, Counts: []float64{1, 3}})
	// B = 4: Q at 0.125, 0.375, 0.625, 0.875 = 50, 133.33, 200, 266.67 (mean 162.5); × 1000/162.5.
	got, err := h.lengths(lengths.Call{N: 4, Mean: 1000, Min: 1, Max: 1 << 20})
	want := []int{308, 821, 1231, 1641}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("got %v, %v; want %v", got, err, want)
	}
	// Sampling: same seed → same lengths, other seed → others; mean still within 0.5 token of L.
	hs, _ := newHistogram(config{Edges: []float64{0, 100, 300}, Counts: []float64{1, 3}, Mode: "sample"})
	a, _ := hs.lengths(lengths.Call{N: 64, Mean: 2000, Min: 1, Max: 1 << 20, Seed: 5})
	b, _ := hs.lengths(lengths.Call{N: 64, Mean: 2000, Min: 1, Max: 1 << 20, Seed: 5})
	c, _ := hs.lengths(lengths.Call{N: 64, Mean: 2000, Min: 1, Max: 1 << 20, Seed: 6})
	sum := 0
	for _, v := range a {
		sum += v
	}
	if !slices.Equal(a, b) || slices.Equal(a, c) || math.Abs(float64(sum)/64-2000) > 0.5 {
		t.Errorf("sample mode: a=%v c=%v mean=%v", a, c, float64(sum)/64)
	}
}

func TestConfigErrors(t *testing.T) {
	cases := []struct {
		c    config
		want string
	}{
		{config{Edges: []float64{0}, Counts: nil}, "edges has 1 values"},
		{config{Edges: []float64{0, 1, 2}, Counts: []float64{1}}, "counts has 1 values, want len(edges) − 1 = 2"},
		{config{Edges: []float64{0, 2, 2}, Counts: []float64{1, 1}}, "edges[2] = 2"},
		{config{Edges: []float64{0, 1}, Counts: []float64{-1}}, "counts[0] = -1"},
		{config{Edges: []float64{0, 1}, Counts: []float64{0}}, "counts sum to 0"},
		{config{Edges: []float64{0, 1}, Counts: []float64{1}, Mode: "random"}, `mode = "random"`},
	}
	for _, c := range cases {
		if _, err := newHistogram(c.c); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.c, err, c.want)
		}
	}
}
