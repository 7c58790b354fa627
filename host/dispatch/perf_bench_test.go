package dispatch

// PERF.md row 3, allocations: the real request planning path (Client.plans in ModeArray: pooled
// buffer, id table, body) at three body sizes, to show that its allocations per request do not
// grow with the body. Run by `make perf` (host/perf).

import (
	"fmt"
	"testing"

	"github.com/genload/genload/host/plan"
)

// BenchmarkPerfBodyAllocs plans one /v1/completions request of B prompts × L token ids, the
// buffer returned to the client's pool after each request as Send does. Reports allocs/op
// (-benchmem) and ns/id; sizes 1 × 1,000, 8 × 8,000 and 64 × 64,000 ids.
func BenchmarkPerfBodyAllocs(b *testing.B) {
	for _, sz := range []struct{ b, l int }{{1, 1000}, {8, 8000}, {64, 64000}} {
		b.Run(fmt.Sprintf("B=%d/L=%d", sz.b, sz.l), func(b *testing.B) {
			prompts := make([][]int32, sz.b)
			for i := range prompts {
				p := make([]int32, sz.l)
				for k := range p {
					p[k] = int32((i*7919 + k*104729) % 151936)
				}
				prompts[i] = p
			}
			c, err := New(Options{Target: "http://127.0.0.1:1", Model: "m"})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			plan, err := plan.ForPrompts(ModeArray, prompts, nil, 1, 100)
			if err != nil {
				b.Fatal(err)
			}
			warm, err := c.calls(plan) // fills the pool and the id table
			if err != nil {
				b.Fatal(err)
			}
			c.putBufs(warm)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				pl, err := c.calls(plan)
				if err != nil {
					b.Fatal(err)
				}
				c.putBufs(pl)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*sz.b*sz.l), "ns/id")
		})
	}
}
