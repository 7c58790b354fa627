package replay

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/genload/genload/host/dispatch"
	"github.com/genload/genload/host/engine"
	"github.com/genload/genload/host/internal/procstat"
	"github.com/genload/genload/host/records"
	"github.com/genload/genload/host/trace"
)

// BenchmarkReplaySendLag replays 600 requests at 200 requests/s (3 s) against the built-in
// engine (MoE profile, time scale 0.05) in the same process and reports the client's send lag
// behind its schedule (connecting included): lag-p50-ms, lag-p99-ms, lag-max-ms, late-1ms
// (requests sent more than 1 ms late), dialled (requests that waited for a new connection),
// and the machine's state over the replay: busy-cores (every process's) and steal-% (the
// share of the guest's CPU time its hypervisor ran something else: a stolen millisecond is a
// send up to a millisecond late, whatever the client does). Prompts are 1,000–3,000 tokens
// with 16–80 output tokens and a 512-token prefix shared by every fourth, so about 40 requests
// are in flight. Each iteration is one whole replay; run it with -benchtime 1x:
//
//	go test -run '^$' -bench ReplaySendLag -benchtime 1x ./host/replay
func BenchmarkReplaySendLag(b *testing.B) {
	bl, tok := builder(b)
	ecfg := engine.DefaultConfig()
	eng, err := engine.New(ecfg, tok)
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Close()
	url, err := eng.Start("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	benchSendLag(b, bl, url, ecfg.ModelName)
}

// BenchmarkReplaySendLagTarget is BenchmarkReplaySendLag against the server at the base URL in
// GENLOAD_REPLAY_TARGET, in its own process (the path of a real replay), for instance the
// built-in engine with its default profile and time scale:
//
//	genload serve --addr 127.0.0.1:18000 &
//	GENLOAD_REPLAY_TARGET=http://127.0.0.1:18000 go test -run '^$' -bench ReplaySendLagTarget -benchtime 1x ./host/replay
//
// The model asked for is the built-in engine's unless GENLOAD_REPLAY_MODEL names another.
// Without GENLOAD_REPLAY_TARGET the benchmark is skipped: it has no server to send to.
func BenchmarkReplaySendLagTarget(b *testing.B) {
	url := os.Getenv("GENLOAD_REPLAY_TARGET")
	if url == "" {
		b.Skip("GENLOAD_REPLAY_TARGET is not set: no server to replay against")
	}
	model := os.Getenv("GENLOAD_REPLAY_MODEL")
	if model == "" {
		model = engine.DefaultConfig().ModelName
	}
	bl, _ := builder(b)
	benchSendLag(b, bl, url, model)
}

// benchSendLag replays the benchmarks' schedule (600 requests at 200/s) against url and
// reports the send lag's quantiles and how many requests waited for a new connection
// (dialled), with the replay's SpareConns (spares=8) and without spares (spares=0).
func benchSendLag(b *testing.B, bl Blocks, url, model string) {
	for _, spares := range []int{SpareConns, 0} {
		b.Run(fmt.Sprintf("spares=%d", spares), func(b *testing.B) { benchSendLagSpares(b, bl, url, model, spares) })
	}
}

func benchSendLagSpares(b *testing.B, bl Blocks, url, model string, spares int) {
	const n, rate = 600, 200
	var reqs []trace.Request
	for i := range n {
		h := []int64{int64(1000 + i), int64(5000 + i), int64(9000 + i), int64(13000 + i), int64(17000 + i), int64(21000 + i)}
		if i%4 == 0 {
			h[0] = 0
		}
		reqs = append(reqs, trace.Request{Src: fmt.Sprint(i), Arrival: time.Duration(i) * time.Second / rate,
			Input: 1000 + (i*737)%2000, Output: 16 + (i*13)%64, Hashes: h})
	}
	s, err := NewSchedule(reqs, 0, 0, 1, 0)
	if err != nil {
		b.Fatal(err)
	}
	client, err := dispatch.New(dispatch.Options{Target: url, Model: model, ContinuousUsage: true, SpareConns: spares})
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	var sum *Summary
	cpu0, _ := procstat.Read()
	for i := 0; b.Loop(); i++ {
		path := filepath.Join(b.TempDir(), fmt.Sprintf("r%d.jsonl", i))
		sum, err = Run(context.Background(), Options{Schedule: s, Blocks: bl, Sender: client, Records: path, Header: records.Header{ID: "bench"}})
		if err != nil {
			b.Fatal(err)
		}
		if sum.OK != n {
			b.Fatalf("%d of %d requests ok: %s", sum.OK, n, sum.FirstError)
		}
	}
	if cpu1, err := procstat.Read(); err == nil {
		busy, steal := cpu1.Since(cpu0, runtime.NumCPU())
		b.ReportMetric(busy, "busy-cores")
		b.ReportMetric(100*steal, "steal-%")
	}
	b.ReportMetric(sum.Lag.P50, "lag-p50-ms")
	b.ReportMetric(sum.Lag.P99, "lag-p99-ms")
	b.ReportMetric(sum.Lag.Max, "lag-max-ms")
	b.ReportMetric(float64(sum.Late1ms), "late-1ms")
	b.ReportMetric(float64(sum.Dialled), "dialled")
}
