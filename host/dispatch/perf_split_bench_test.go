package dispatch

// PERF.md rows 1 and 2 with the server in another process (server on
// core 0, client on core 1): `make perf` (host/perf) starts `genload-perf serve` and passes its
// addresses in the GENLOAD_PERF_* variables below; without them these benchmarks skip. The
// clients are the same as in bench_test.go and stamp_bench_test.go (genload's Client.Send,
// net/http + encoding/json, raw TCP + fastjson); the process CPU is now the client's alone.

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"testing"
)

func splitAddr(b *testing.B, env string) string {
	a := os.Getenv(env)
	if a == "" {
		b.Skipf("%s not set (run through make perf)", env)
	}
	return a
}

// BenchmarkPerfSplitChunkCost is BenchmarkChunkCost against the burst servers of
// GENLOAD_PERF_BURST1000 (C=1, 64; N=1000) and GENLOAD_PERF_BURST100 (C=512, N=100).
func BenchmarkPerfSplitChunkCost(b *testing.B) {
	splitChunkCost(b, benchShapes)
}

// BenchmarkPerfSplitRSS is the C=512, N=1000 shape of BenchmarkPerfSplitChunkCost (the perf
// anchors' memory shape); make perf runs one client per process and reads its peak RSS.
func BenchmarkPerfSplitRSS(b *testing.B) {
	splitChunkCost(b, []struct{ c, n int }{{512, 1000}})
}

func splitChunkCost(b *testing.B, shapes []struct{ c, n int }) {
	for _, sh := range shapes {
		addr := splitAddr(b, fmt.Sprintf("GENLOAD_PERF_BURST%d", sh.n))
		u := "http://" + addr
		prompts := make([][]int32, sh.c)
		for i := range prompts {
			prompts[i] = []int32{1, 2, 3}
		}
		b.Run(fmt.Sprintf("genload/C=%d/N=%d", sh.c, sh.n), func(b *testing.B) {
			cl, err := New(Options{Target: u})
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
		b.Run(fmt.Sprintf("nethttp/C=%d/N=%d", sh.c, sh.n), func(b *testing.B) {
			hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024}}
			defer hc.CloseIdleConnections()
			perChunk(b, sh.c, sh.n, func() { parallel(b, sh.c, sh.n, func() int { return netHTTPStream(b, hc, u) }) })
		})
		b.Run(fmt.Sprintf("raw/C=%d/N=%d", sh.c, sh.n), func(b *testing.B) {
			pool := &rawPool{addr: addr}
			defer pool.close()
			perChunk(b, sh.c, sh.n, func() { parallel(b, sh.c, sh.n, func() int { return rawStream(b, pool) }) })
		})
	}
}

// BenchmarkPerfSplitTimestampError is BenchmarkTimestampError against the paced servers of
// GENLOAD_PERF_STEP20MS (512 streams × 20 chunks on a global 20 ms step) and
// GENLOAD_PERF_PACED1MS (64 streams × 200 chunks, 1 ms apart). Error = arrival (Unix ns) −
// the server's send stamp; p50/p99 in µs. Run with -benchtime 1x.
func BenchmarkPerfSplitTimestampError(b *testing.B) {
	for _, sc := range timestampScenarios {
		timestampClients(b, sc.name, splitAddr(b, sc.env), sc.c, sc.n)
	}
}
