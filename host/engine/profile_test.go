package engine

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestShippedProfilesLoad(t *testing.T) {
	if got := strings.Join(ProfileNames(), ","); got != "dense-8b,moe-30b-a3b" {
		t.Errorf("profiles %s", got)
	}
	for _, n := range ProfileNames() {
		p, err := LoadProfile(n)
		if err != nil {
			t.Fatal(err)
		}
		if p.Name != n || p.FixedMs <= 0 || p.KVReadNsPerToken <= 0 || p.PrefillNsPerToken <= 0 {
			t.Errorf("%s: %+v", n, p)
		}
	}
	if p, _ := LoadProfile(""); p.Name != DefaultProfile {
		t.Errorf("empty name loads %q", p.Name)
	}
}

func TestStepTimeArithmetic(t *testing.T) {
	p := Profile{FixedMs: 2, PerSeqMs: 0.5, KVReadNsPerToken: 10, KVTailNsPerToken: 5,
		PrefillNsPerToken: 1000, PrefillAttnNsPerPair: 1, MoEExpertUs: 2}
	cases := []struct {
		name string
		s    StepShape
		want time.Duration
	}{
		{"empty step costs nothing", StepShape{}, 0},
		// 2 + 0.5·4 + (10·4000 + 5·2500)/1e6 = 4 + 0.0525 ms
		{"decode", StepShape{Seqs: 4, DecodeSeqs: 4, SumCtx: 4000, MaxCtx: 2500}, 4052500 * time.Nanosecond},
		// 2 + 0.5 + (1000·100 + 1·5050)/1e6 = 2.5 + 0.10505 ms
		{"prefill", StepShape{Seqs: 1, PrefillTokens: 100, PrefillPairs: 5050}, 2605050 * time.Nanosecond},
		// 2 + 0.5 + 2·100/1e3 + 1000·3/1e6 + 0.7 = 3.403 ms
		{"experts, spec", StepShape{Seqs: 1, DecodeSeqs: 1, Experts: 100, SpecTokens: 3, DraftMs: 0.7}, 3403 * time.Microsecond},
	}
	for _, tc := range cases {
		if got := p.StepTime(tc.s); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestPrefillExperts(t *testing.T) {
	p := Profile{MoELayers: 2, MoEExperts: 4, MoETopK: 2}
	// 8 pairs; one token leaves a pair untouched with probability 1/2: 8·(1 − 1/2) = 4;
	// two tokens: 8·(1 − 1/4) = 6; with 6 already active: (8 − 6)·(1 − 1/4) = 1.5 → 2.
	for _, tc := range []struct {
		have   int
		tokens int64
		want   int
	}{{0, 1, 4}, {0, 2, 6}, {6, 2, 2}, {0, 0, 0}} {
		if got := p.prefillExperts(tc.have, tc.tokens); got != tc.want {
			t.Errorf("have %d tokens %d: %d, want %d", tc.have, tc.tokens, got, tc.want)
		}
	}
}

func TestLoadProfileErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	cases := []struct {
		name, arg, want string
	}{
		{"unknown name", "h100-70b", `engine profile "h100-70b": unknown (known: dense-8b, moe-30b-a3b; or a profile file of your own: a path ending in .toml)`},
		{"unknown key", write("a.toml", "name = \"x\"\nfixed_msec = 1\n"), "unknown key [fixed_msec]"},
		{"syntax error with line", write("b.toml", "name = \"x\"\nfixed_ms = = 1\n"), "b.toml:2:"},
		{"negative and bad top_k at once", write("c.toml", "fixed_ms = -1\nmoe_layers = 2\nmoe_experts = 4\nmoe_top_k = 5\n"),
			"[fixed_ms] must be >= 0, got -1\n[moe_top_k] must be in 1..[moe_experts]=4, got 5"},
	}
	for _, tc := range cases {
		_, err := LoadProfile(tc.arg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestConfigValidateAndFlags(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	c := DefaultConfig()
	c.Dialect, c.MaxNumSeqs, c.SpecAcceptance, c.SpinWait = "openai", 0, 2, MaxSpinWait+time.Microsecond
	err := c.Validate()
	for _, want := range []string{"[dialect]", "[max-num-seqs]", "[spec-acceptance]", "[spin-wait] must be in [0, 5ms], got 5.001ms"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %s", err, want)
		}
	}
	// Every flag parses into the config.
	cfg := DefaultConfig()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	RegisterFlags(fs, &cfg)
	args := []string{"-profile", "dense-8b", "-time-scale", "1", "-spin-wait", "300us", "-max-model-len", "4096", "-model", "m",
		"-seed", "9", "-dialect", "tgi", "-max-num-seqs", "8", "-max-num-batched-tokens", "512",
		"-kv-cache-tokens", "65536", "-block-size", "32", "-no-prefix-caching", "-eos-probability", "0.5",
		"-vocab-size", "1000", "-hide-prompt-tokens-details", "-force-include-usage", "-stream-interval", "2",
		"-spec-tokens", "4", "-spec-acceptance", "0.5", "-spec-draft-ms", "1", "-timing-headers=false",
		"-fault-every", "2", "-fault-status", "503", "-fault-error-after", "3", "-fault-reset-after", "4",
		"-fault-cut-after", "5", "-fault-first-token-delay", "1s", "-fault-stall-after", "6",
		"-fault-stall-for", "2s", "-fault-keep-alive", "3s", "-loading-for", "4s", "-step-log", "steps.log",
		"-noise-step-cv", "0.02", "-noise-burst-cv", "0.05", "-noise-slow-prob", "0.001", "-noise-slow-factor", "5", "-noise-seed", "7",
		"-quirk", "zero-usage,tokens-per-chunk=2", "-quirk", "late-first-chunk=40ms,coalesce=0.25"}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	want := Config{Profile: "dense-8b", TimeScale: 1, SpinWait: 300 * time.Microsecond, MaxModelLen: 4096, ModelName: "m", Seed: 9, Dialect: "tgi",
		MaxNumSeqs: 8, MaxNumBatchedTokens: 512, KVCacheTokens: 65536, BlockSize: 32, DisablePrefixCaching: true,
		EOSProbability: 0.5, VocabSize: 1000, HidePromptTokensDetails: true, ForceIncludeUsage: true,
		StreamInterval: 2, SpecTokens: 4, SpecAcceptance: 0.5, SpecDraftMs: 1, TimingHeaders: false,
		Faults: Faults{Every: 2, Status: 503, ErrorAfter: 3, ResetAfter: 4, CutAfter: 5, FirstTokenDelay: time.Second,
			StallAfter: 6, StallFor: 2 * time.Second, KeepAlive: 3 * time.Second, LoadingFor: 4 * time.Second},
		Quirks:      Quirks{ZeroUsage: true, TokensPerChunk: 2, LateFirstChunk: 40 * time.Millisecond, Coalesce: 0.25},
		StepLogFile: "steps.log", Noise: Noise{StepCV: 0.02, BurstCV: 0.05, SlowProb: 0.001, SlowFactor: 5, Seed: 7}}
	if cfg != want {
		t.Errorf("flags parsed into\n%+v\nwant\n%+v", cfg, want)
	}
	// ... and the test sets every registered flag.
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	fs.VisitAll(func(f *flag.Flag) {
		if !set[f.Name] {
			t.Errorf("flag -%s not covered by this test", f.Name)
		}
	})
}
