package run

import (
	"strings"
	"testing"
	"time"

	"github.com/genload/genload/host/warning"

	"github.com/genload/genload/host/measure"
	"github.com/genload/genload/host/scrape"
)

func TestResolveContextTakesTheSmallestKnown(t *testing.T) {
	cases := []struct {
		cfg, server, tok int
		want             int
		src              string
	}{
		{0, 131072, 40960, 40960, "tokenizer config.json [max_position_embeddings]"},
		{0, 32768, 40960, 32768, "server /v1/models max_model_len"},
		{8192, 32768, 0, 8192, "bench.toml [context]"},
		{0, 0, 0, 0, "unknown"},
	}
	for _, c := range cases {
		n, src := resolveContext(c.cfg, c.server, c.tok, "config.json [max_position_embeddings]")
		if n != c.want || src != c.src {
			t.Errorf("resolveContext(%d, %d, %d) = %d %q, want %d %q", c.cfg, c.server, c.tok, n, src, c.want, c.src)
		}
	}
}

// TestEstimateWarningsFlagEachEstimateAgainstTheTruth uses the figures a speculating engine
// gave (draft_tokens = 3): truth 1.061 ms, client 1.096 (+3 %: fine), headers 1.157 (+9 %),
// /metrics 0.422 (−60 %: per token, chunks carry 2.5 tokens).
func TestEstimateWarningsFlagEachEstimateAgainstTheTruth(t *testing.T) {
	f := &measure.Figures{PerForward: measure.Summary{N: 8, Mean: 1096 * time.Microsecond}, TokensPerChunk: 2.5,
		Header: &measure.HeaderFigure{PerForward: measure.Summary{N: 1, Mean: 1157 * time.Microsecond}}}
	m := &scrape.CellMetrics{Steps: scrape.Steps{HasTruthDecode: true, TruthDecodeStepTime: 1061 * time.Microsecond,
		HasStepTime: true, StepTime: 422 * time.Microsecond}}
	ws := texts(estimateWarnings(f, m, true, false))
	if len(ws) != 2 || !strings.Contains(ws[0], "hdr fwd (timing headers) 1.157 ms is +9 %") ||
		!strings.Contains(ws[1], "metrics fwd (/metrics) 0.422 ms is -60 %") || !strings.Contains(ws[1], "per token") {
		t.Fatalf("warnings:\n%s", strings.Join(ws, "\n"))
	}
	// Without the engine's truth the client's figure is the reference.
	ws = texts(estimateWarnings(f, &scrape.CellMetrics{}, true, false))
	if len(ws) != 1 || !strings.Contains(ws[0], "of the client's fwd 1.096 ms") {
		t.Fatalf("warnings without truth:\n%s", strings.Join(ws, "\n"))
	}
}

// The server's own per-sequence timings (llama.cpp, ollama) are one more source: within 5 %
// of the client's fwd they say nothing; 8 % off, they are named with their field.
func TestServerTimingsJoinTheSources(t *testing.T) {
	f := &measure.Figures{PerForward: measure.Summary{N: 8, Mean: 7 * time.Millisecond}, TokensPerChunk: 1,
		ServerTimings: &measure.ServerTimings{Source: "ollama eval_duration", PerForward: measure.Summary{N: 8, Mean: 7140 * time.Microsecond}}}
	if ws := texts(estimateWarnings(f, nil, false, false)); len(ws) != 0 {
		t.Fatalf("+2 %%: warnings %q", ws)
	}
	f.ServerTimings.PerForward.Mean = 7560 * time.Microsecond
	ws := estimateWarnings(f, nil, false, false)
	if len(ws) != 1 || ws[0].Name != warning.SourcesDisagree || !strings.Contains(ws[0].Text, "srv fwd (ollama eval_duration) 7.560 ms is +8 % of the client's fwd 7.000 ms") {
		t.Fatalf("+8 %%: warnings %+v", ws)
	}
}
