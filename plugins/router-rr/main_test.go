package main

import (
	"slices"
	"testing"
)

func TestRoundRobin(t *testing.T) {
	rr := &roundRobin{next: 0}
	steps := []struct {
		n, w int
		want []int
	}{
		{3, 4, []int{0, 1, 2}}, // c = 0
		{3, 4, []int{3, 0, 1}}, // c = 3
		{2, 5, []int{1, 2}},    // c = 6: 6 mod 5 = 1
	}
	for i, s := range steps {
		got, _ := rr.route(make([]int, s.n), s.w)
		if !slices.Equal(got, s.want) {
			t.Errorf("step %d: %v, want %v", i, got, s.want)
		}
	}
}
