package engine

import (
	"net/http"
	"testing"
)

// TestDialectValuesComplete checks that every dialect value fills what the handlers call
// without a nil check, under the name Config.Dialect gives it.
func TestDialectValuesComplete(t *testing.T) {
	if len(dialects) != 5 {
		t.Fatalf("%d dialects, want vllm, sglang, llamacpp, tgi, ollama", len(dialects))
	}
	for name, d := range dialects {
		if d.name != name {
			t.Errorf("dialects[%q].name = %q", name, d.name)
		}
		// ollama has no tokenize endpoint, no /metrics and no max_model_len: its handlers
		// answer 404 for the first two
		bare := name == DialectOllama
		if bare != (d.tokenize == nil) || bare != d.noMetrics || bare == d.modelLen {
			t.Errorf("%s: tokenize %v, noMetrics %v, modelLen %v", name, d.tokenize != nil, d.noMetrics, d.modelLen)
		}
		if d.contextOverflow == nil || d.statusError == nil || d.appendError == nil ||
			d.appendStreamError == nil || d.metricLabels == nil || d.writeMetrics == nil {
			t.Errorf("%s: a behaviour func is nil", name)
		}
		if d.stopFinish == "" || d.pendingFinish == "" || d.badType == "" || d.owner == "" ||
			(d.detokenizeKey == "") != bare || d.usagePrefix == "" || d.badStatus == 0 {
			t.Errorf("%s: a wire string is empty", name)
		}
		if !d.done || d.usage != usageReal {
			t.Errorf("%s: a quirk's setting is on in the plain dialect", name)
		}
		// every dialect sends one chunk per token or honours stream_interval; the two
		// per-token servers are the ones whose chunk size is fixed at 1
		if d.perTokenChunks != (d.chunkTokens == 1) {
			t.Errorf("%s: perTokenChunks %v with chunkTokens %d", name, d.perTokenChunks, d.chunkTokens)
		}
		if a := d.contextOverflow(90, 20, 100); a.status != http.StatusBadRequest && a.status != http.StatusUnprocessableEntity {
			t.Errorf("%s: context overflow status %d", name, a.status)
		}
	}
}

// TestWireForQuirks checks that each wire quirk is one change to the dialect value and that
// the value in the dialects table is left as it was.
func TestWireForQuirks(t *testing.T) {
	cases := []struct {
		quirk string
		ok    func(d dialect) bool
	}{
		{"zero-usage", func(d dialect) bool { return d.usage == usageZero && d.usageChunk }},
		{"no-usage", func(d dialect) bool { return d.usage == usageNone }},
		{"usage-total-only", func(d dialect) bool { return !d.continuousUsage && d.logprobs == lpNone }},
		{"usage-every-chunk", func(d dialect) bool { return d.usageEveryChunk }},
		{"tokens-per-chunk=3", func(d dialect) bool { return d.chunkTokens == 3 }},
		{"empty-first-chunk", func(d dialect) bool { return d.emptyFirstChunk }},
		{"separate-finish", func(d dialect) bool { return d.separateFinish && !d.finalChunk }},
		{"no-done", func(d dialect) bool { return !d.done }},
		{"ignore-n", func(d dialect) bool { return d.ignoreN }},
		{"strings-only", func(d dialect) bool { return d.stringsOnly }},
		{"add-bos", func(d dialect) bool { return d.addBOS }},
		{"server-template", func(d dialect) bool { return d.serverTemplate }},
		{"no-model-len", func(d dialect) bool { return !d.modelLen }},
		{"no-metrics", func(d dialect) bool { return d.noMetrics }},
		{"late-histogram", func(d dialect) bool { return d.lateHistogram }},
		{"hide-truth", func(d dialect) bool { return d.hideTruth }},
	}
	for _, tc := range cases {
		t.Run(tc.quirk, func(t *testing.T) {
			cfg := DefaultConfig()
			if err := cfg.Quirks.Set(tc.quirk); err != nil {
				t.Fatal(err)
			}
			if d := wireFor(cfg); !tc.ok(d) {
				t.Errorf("wireFor with %s: %+v", tc.quirk, d)
			}
			if plain := wireFor(DefaultConfig()); tc.ok(plain) {
				t.Errorf("the plain vllm dialect already satisfies %s", tc.quirk)
			}
		})
	}
	// HidePromptTokensDetails: vLLM drops the details in streams, keeps null in bodies
	cfg := DefaultConfig()
	cfg.HidePromptTokensDetails = true
	if d := wireFor(cfg); d.streamDetails != detailsNone || d.details != detailsNull {
		t.Errorf("hidden details: stream %d, body %d", d.streamDetails, d.details)
	}
	if vllmDialect.streamDetails != detailsCached {
		t.Error("wireFor changed the vllm value in the dialects table")
	}
}
