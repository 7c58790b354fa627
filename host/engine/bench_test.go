package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// bigBody returns a streaming completion body with b distinct prompts of l token ids each;
// different seeds give prompts that share no prefix.
func bigBody(seed uint64, b, l, maxTokens int) []byte {
	buf := make([]byte, 0, b*l*7+200)
	buf = append(buf, `{"model":"genload-sim","prompt":[`...)
	x := mix64(seed)
	for i := 0; i < b; i++ {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, '[')
		for j := 0; j < l; j++ {
			if j > 0 {
				buf = append(buf, ',')
			}
			x = mix64(x + 1)
			buf = strconv.AppendUint(buf, x%151000, 10)
		}
		buf = append(buf, ']')
	}
	buf = append(buf, `],"n":1,"max_tokens":`...)
	buf = strconv.AppendInt(buf, int64(maxTokens), 10)
	buf = append(buf, `,"ignore_eos":true,"temperature":0,"stream":true,"stream_options":{"include_usage":true}}`...)
	return buf
}

// BenchmarkParseLargePrompt parses a 64 × 64,000-id body (≈ 25 MB).
func BenchmarkParseLargePrompt(b *testing.B) {
	body := bigBody(1, 64, 64000, 100)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		req, err := parseCompletion(body)
		if err != nil || len(req.prompts) != 64 || len(req.prompts[63]) != 64000 {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(64*64000), "ns/id")
}

// BenchmarkHashPrompt hashes one 64,000-token prompt into 16-token blocks.
func BenchmarkHashPrompt(b *testing.B) {
	ids := make([]int32, 64000)
	for i := range ids {
		ids[i] = int32(i * 7 % 150000)
	}
	for b.Loop() {
		hashBlocks(ids, 16)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/64000, "ns/token")
}

// runCell sends a warmup (max_tokens 1) and a measured request (max_tokens 100) with the same
// body and returns their wall durations.
func runCell(b *testing.B, url string, bsz, l int) (warm, meas time.Duration) {
	seed := uint64(bsz)<<32 | uint64(l)
	for i, mt := range []int{1, 100} {
		body := bigBody(seed, bsz, l, mt)
		start := time.Now()
		resp, err := http.Post(url+"/v1/completions", "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || n == 0 {
			b.Fatalf("status %d", resp.StatusCode)
		}
		if i == 0 {
			warm = time.Since(start)
		} else {
			meas = time.Since(start)
		}
	}
	return
}

// BenchmarkCellB64L64000 runs the largest default cell (B = 64 distinct prompts of 64,000
// tokens: warmup then a 100-token measurement) at the default time scale and reports wall
// seconds of each request.
func BenchmarkCellB64L64000(b *testing.B) {
	e, err := New(DefaultConfig(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	url, err := e.Start("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		e.ResetPrefixCache()
		warm, meas := runCell(b, url, 64, 64000)
		b.ReportMetric(warm.Seconds(), "warmup-s")
		b.ReportMetric(meas.Seconds(), "measured-s")
	}
}

// BenchmarkDefaultMatrixSimulated sends the default matrix (uniform lengths L × B, warmup +
// 100-token measurement per cell) through an engine with TimeScale 0 and reports the total
// simulated seconds, so wall time = simulated × TimeScale + overheads.
func BenchmarkDefaultMatrixSimulated(b *testing.B) {
	cfg := DefaultConfig()
	cfg.TimeScale = 0
	e, err := New(cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	srv := httptest.NewServer(e.Handler())
	defer srv.Close()
	for b.Loop() {
		for _, l := range []int{1000, 2000, 4000, 8000, 16000, 32000, 64000} {
			for _, bs := range []int{1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 32, 48, 64} {
				runCell(b, srv.URL, bs, l)
			}
		}
	}
	e.metrics.mu.Lock()
	sim := e.metrics.stepSimS
	e.metrics.mu.Unlock()
	b.ReportMetric(sim, "simulated-s")
	b.ReportMetric(sim*DefaultConfig().TimeScale, "wall-at-default-scale-s")
}

// BenchmarkConcurrentStreams runs 1,000 concurrent streaming requests of 100 tokens each.
func BenchmarkConcurrentStreams(b *testing.B) {
	cfg := DefaultConfig()
	cfg.MaxNumSeqs = 1024
	e, err := New(cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	url, err := e.Start("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: 1000, MaxConnsPerHost: 0}
	client := &http.Client{Transport: tr}
	for b.Loop() {
		var wg sync.WaitGroup
		errs := make(chan error, 1000)
		for i := 0; i < 1000; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				body := fmt.Sprintf(`{"prompt":[%d,2,3,4,5,6,7,8],"max_tokens":100,"ignore_eos":true,"stream":true,"stream_options":{}}`, i)
				resp, err := client.Post(url+"/v1/completions", "application/json", bytes.NewBufferString(body))
				if err != nil {
					errs <- err
					return
				}
				data, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if !bytes.HasSuffix(data, []byte("data: [DONE]\n\n")) || bytes.Count(data, []byte("\n\n")) != 102 {
					errs <- fmt.Errorf("stream %d: %d events", i, bytes.Count(data, []byte("\n\n")))
				}
			}(i)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
	}
	var m struct{}
	_ = json.Unmarshal(nil, &m)
}

// BenchmarkSmallCellTiming measures how faithfully short steps are slept: one B=1, L=1000
// request of 100 tokens at the default time scale; reports measured wall decode time over
// the intended (Σ simulated step time × scale) for the same steps.
func BenchmarkSmallCellTiming(b *testing.B) {
	e, err := New(DefaultConfig(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	url, err := e.Start("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		e.metrics.mu.Lock()
		sim0 := e.metrics.stepSimS
		e.metrics.mu.Unlock()
		start := time.Now()
		resp, err := http.Post(url+"/v1/completions", "application/json", bytes.NewReader(bigBody(uint64(b.N), 1, 1000, 100)))
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		took := time.Since(start)
		e.metrics.mu.Lock()
		intended := (e.metrics.stepSimS - sim0) * e.Config().TimeScale
		e.metrics.mu.Unlock()
		b.ReportMetric(took.Seconds()/intended, "wall/intended")
		b.ReportMetric(intended*1e3/100, "intended-ms/step")
	}
}

// BenchmarkParseTextPrompt parses a body whose prompt is one 1 MB string with an escape
// every 64 bytes (the strict string reader: control characters, escapes through
// encoding/json).
func BenchmarkParseTextPrompt(b *testing.B) {
	body := []byte(`{"prompt":"` + strings.Repeat(strings.Repeat("x", 62)+`\n`, 1<<14) + `","max_tokens":16}`)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		req, err := parseCompletion(body)
		if err != nil || len(req.texts) != 1 || len(req.texts[0]) != 63<<14 {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseTextPromptPlain is BenchmarkParseTextPrompt without escapes (the string is
// taken as it stands).
func BenchmarkParseTextPromptPlain(b *testing.B) {
	body := []byte(`{"prompt":"` + strings.Repeat("x", 1<<20) + `","max_tokens":16}`)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		req, err := parseCompletion(body)
		if err != nil || len(req.texts) != 1 || len(req.texts[0]) != 1<<20 {
			b.Fatal(err)
		}
	}
}
