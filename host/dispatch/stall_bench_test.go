package dispatch

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkStallChunkCost is BenchmarkChunkCost's genload rows with stall detection on (the
// bench.toml defaults: 20 steps, at least 10 s), for the cost of the clock hook per read:
// go test ./host/dispatch -run '^$' -bench 'ChunkCost/genload|StallChunkCost'
func BenchmarkStallChunkCost(b *testing.B) {
	for _, sh := range benchShapes {
		srv := newBurstServer(b, sh.n)
		prompts := make([][]int32, sh.c)
		for i := range prompts {
			prompts[i] = []int32{1, 2, 3}
		}
		b.Run(fmt.Sprintf("C=%d/N=%d", sh.c, sh.n), func(b *testing.B) {
			cl, err := New(Options{Target: "http://" + srv.Addr(), StallSteps: 20, StallMin: 10 * time.Second})
			if err != nil {
				b.Fatal(err)
			}
			defer cl.Close()
			perChunk(b, sh.c, sh.n, func() {
				res, err := cl.Send(context.Background(), ModeRouted, prompts, sh.n)
				if err != nil || res.Err() != nil {
					b.Fatal(err, res.Err())
				}
			})
		})
	}
}
