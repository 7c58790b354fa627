package engine

// PERF.md row 6 — the built-in engine's own capacity, so that its cost never distorts a client
// measurement: run by `make perf` (host/perf) with -benchtime 1x.

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"syscall"
	"testing"
	"time"
)

// BenchmarkPerfEngineB64L64k sends one request of B = 64 distinct 64,000-token prompts with
// max_tokens = 300 to an engine with TimeScale 0 (no sleeping: steps run back to back) and
// measures, from the first streamed token chunk to [DONE]:
//   - steps/s: decode steps (engine metrics) per wall second; the scheduler, the KV cache
//     bookkeeping and the HTTP streaming all run, nothing is slept;
//   - cpu-ns/chunk: process CPU (getrusage: engine + a bufio line-counting client) per token
//     chunk, 64 per step;
//   - need-steps/s: 1 / (simulated step time of this shape × the default TimeScale 0.05), the
//     rate the engine must sustain to pace the default profile at B = 64, L = 64,000 in real
//     time; steps/s ÷ need-steps/s is its headroom.
//
// Prefill (parsing the 25 MB body, hashing 4.1 M prompt tokens) is outside the window.
func BenchmarkPerfEngineB64L64k(b *testing.B) {
	const bsz, l, maxTokens = 64, 64000, 300
	cfg := DefaultConfig()
	cfg.TimeScale = 0
	e, err := New(cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	url, err := e.Start("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	hc := &http.Client{}
	var steps, wall, cpu, chunks float64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		e.ResetPrefixCache()
		body := bigBody(uint64(1000+i), bsz, l, maxTokens)
		b.StartTimer()
		resp, err := hc.Post(url+"/v1/completions", "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
		br := bufio.NewReaderSize(resp.Body, 64<<10)
		var t0 time.Time
		var ru0, ru1 syscall.Rusage
		var dec0 uint64
		n := 0
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				b.Fatalf("stream ended before [DONE] after %d token chunks: %v", n, err)
			}
			if !bytes.HasPrefix(line, []byte("data: ")) {
				continue
			}
			if bytes.HasPrefix(line, []byte("data: [DONE]")) {
				break
			}
			if !bytes.Contains(line, []byte(`"text"`)) {
				continue // usage chunk
			}
			n++
			if n == 1 {
				t0 = time.Now()
				_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
				e.metrics.mu.Lock()
				dec0 = e.metrics.decSteps
				e.metrics.mu.Unlock()
			}
		}
		took := time.Since(t0)
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
		e.metrics.mu.Lock()
		dec1 := e.metrics.decSteps
		e.metrics.mu.Unlock()
		resp.Body.Close()
		if n != bsz*maxTokens {
			b.Fatalf("%d token chunks, want %d", n, bsz*maxTokens)
		}
		steps += float64(dec1 - dec0)
		wall += took.Seconds()
		cpu += float64(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
		chunks += float64(n - 1)
	}
	sim := e.Profile().StepTime(StepShape{Seqs: bsz, DecodeSeqs: bsz, SumCtx: bsz * (l + maxTokens/2), MaxCtx: l + maxTokens/2})
	need := 1 / (sim.Seconds() * DefaultConfig().TimeScale)
	b.ReportMetric(steps/wall, "steps/s")
	b.ReportMetric(cpu/chunks, "cpu-ns/chunk")
	b.ReportMetric(need, "need-steps/s")
	if testing.Verbose() {
		fmt.Printf("engine B=%d L=%d: %.0f decode steps in %.3f s, simulated step %v\n", bsz, l, steps, wall, sim)
	}
}
