package scrape

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/genload/genload/host/engine"
)

// enginePage is the built-in engine's /metrics in dialect d after one 5-token request: a page
// of every kind of family (gauges, counters, histograms, labelled and not) as a server writes
// it.
func enginePage(tb testing.TB, d string) []byte {
	tb.Helper()
	cfg := engine.DefaultConfig()
	cfg.TimeScale, cfg.Dialect = 0, d
	e, err := engine.New(cfg, nil)
	if err != nil {
		tb.Fatal(err)
	}
	srv := httptest.NewServer(e.Handler())
	defer func() { srv.Close(); e.Close() }()
	resp, err := http.Post(srv.URL+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"abc","max_tokens":5,"ignore_eos":true}`))
	if err != nil {
		tb.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	resp, err = http.Get(srv.URL + "/metrics")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	page, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return page
}

// sameFamily checks FamilyLines against the whole page's parse, the oracle: for every family
// of page, the lines kept for its name parse to that family exactly (its text as expfmt
// writes it). A family FamilyLines finds no sample of is left to the whole parse.
func sameFamily(t *testing.T, page []byte) {
	t.Helper()
	whole, err := Parse(bytes.NewReader(page))
	if err != nil {
		return
	}
	for name, fam := range whole {
		want, ok := text(t, map[string]*dto.MetricFamily{name: fam})
		if !ok {
			continue
		}
		lines, found := FamilyLines(page, name)
		if !found { // no sample line of its own (a quoted name, or none): the caller parses the whole page
			continue
		}
		only, err := Parse(bytes.NewReader(lines))
		if err != nil {
			t.Fatalf("%s: its lines do not parse: %v\n%s", name, err, lines)
		}
		got, _ := text(t, only)
		if got != want {
			t.Fatalf("%s: its lines parse to\n%s\nthe whole page to\n%s", name, got, want)
		}
	}
}

// Every dialect's page: each family's lines alone parse to what the whole page says of it,
// the running gauge is found, and its lines are a small part of the page.
func TestFamilyLinesOnEnginePages(t *testing.T) {
	for _, n := range []Names{VLLM, SGLang, LlamaCpp, TGI} {
		t.Run(n.Dialect, func(t *testing.T) {
			page := enginePage(t, n.Dialect)
			sameFamily(t, page)
			lines, ok := FamilyLines(page, n.Running)
			if !ok || 10*len(lines) > len(page) {
				t.Fatalf("running gauge %s: found %v, %d of the page's %d bytes:\n%s", n.Running, ok, len(lines), len(page), lines)
			}
		})
	}
}

// ScrapeFamily reads the gauge the sampler wants from a page that has it, and from a page
// whose samples the line filter cannot find (parsed whole); errors are Scrape's.
func TestScrapeFamily(t *testing.T) {
	pages := []string{
		vllmText(3, 7, 0.1, 0.05),
		"# TYPE vllm:num_requests_running gauge\n{\"vllm:num_requests_running\",engine=\"0\"} 7\n", // a quoted name
	}
	for _, p := range pages {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, p) }))
		snap, err := (&Scraper{URL: srv.URL + "/metrics"}).ScrapeFamily(context.Background(), VLLM.Running)
		srv.Close()
		if v, ok := snap.Value(VLLM.Running); err != nil || !ok || v != 7 {
			t.Fatalf("page %q: running %v (%v), %v", p, v, ok, err)
		}
	}
	bad := httptest.NewServer(http.NotFoundHandler())
	defer bad.Close()
	if _, err := (&Scraper{URL: bad.URL + "/metrics"}).ScrapeFamily(context.Background(), VLLM.Running); err == nil || !strings.Contains(err.Error(), "GET "+bad.URL+"/metrics: status 404") {
		t.Fatalf("err = %v", err)
	}
}

// FuzzFamilyLines holds FamilyLines to the whole page's parse on any text that parses.
func FuzzFamilyLines(f *testing.F) {
	f.Add(vllmText(3, 2, 0.1, 0.05))
	f.Add("# TYPE tgi_batch_decode_duration histogram\ntgi_batch_decode_duration_bucket{method=\"decode\",le=\"+Inf\"} 1\ntgi_batch_decode_duration_sum{method=\"decode\"} 1\ntgi_batch_decode_duration_count{method=\"decode\"} 1\ntgi_batch_current_size 2\n")
	f.Add("# TYPE s summary\ns{quantile=\"0.5\"} 1\ns_sum 3\ns_count 2\nx{a=\"1\",b=\"2\"} 4\nx{a=\"2\"} 5\n")
	f.Add("# TYPE a gauge\na 1\n# TYPE a_count counter\na_count 2\n# HELP a_b x\na_b 3")
	f.Fuzz(func(t *testing.T, in string) {
		if len(in) > 1<<12 {
			return
		}
		sameFamily(t, []byte(in))
	})
}

// The occupancy sampler's parse of a page, whole (Scrape) and its running gauge's lines alone
// (ScrapeFamily), on the built-in engine's vLLM page.
func BenchmarkScrapeFamily(b *testing.B) {
	page := enginePage(b, VLLM.Dialect)
	b.Run("whole", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Parse(bytes.NewReader(page)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("family", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			lines, _ := FamilyLines(page, VLLM.Running)
			if _, err := Parse(bytes.NewReader(lines)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
