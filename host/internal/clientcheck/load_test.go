package clientcheck

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/genload/genload/host/dispatch"
	"github.com/genload/genload/host/engine"
	"github.com/genload/genload/host/measure"
)

// Routed mode with 1,000 concurrent streams against the built-in engine: every stream
// completes; afterwards no connection and no goroutine is left behind, and the heap is
// bounded.
func TestThousandStreamsNoLeak(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	const streams, maxTok = 1000, 8
	base := runtime.NumGoroutine()
	cfg := engine.DefaultConfig()
	cfg.TimeScale = 0.01
	cfg.MaxNumSeqs = 1024
	e, err := engine.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	u, err := e.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c, err := dispatch.New(dispatch.Options{Target: u, TotalTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ps := prompts(streams, 20)
	for round := range 2 {
		res, err := c.Send(context.Background(), dispatch.ModeRouted, ps, maxTok)
		if err != nil {
			t.Fatal(err)
		}
		if err := res.Err(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		f := measure.Compute(res, measure.Options{})
		if f.Counted != streams || f.CompletionTokens != streams*maxTok {
			t.Fatalf("round %d: counted %d, tokens %d", round, f.Counted, f.CompletionTokens)
		}
		// keep-alive: the second round reuses the first round's connections
		if n := c.OpenConns(); n > streams {
			t.Fatalf("round %d: %d connections open for %d streams", round, n, streams)
		}
	}
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	t.Logf("heap in use after 2×%d streams: %.1f MB, open conns %d", streams, float64(ms.HeapInuse)/1e6, c.OpenConns())
	if ms.HeapInuse > 512<<20 {
		t.Errorf("heap in use %d MB", ms.HeapInuse>>20)
	}
	c.Close()
	e.Close()
	if n := c.OpenConns(); n != 0 {
		t.Errorf("%d connections open after Close", n)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > base+5 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > base+5 {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines after close (started with %d):\n%s", n, base, buf[:runtime.Stack(buf, true)])
	}
}
