package config

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"sort"
	"strings"

	"github.com/genload/genload/host/exitcode"
)

// labelKeyRe is what a [labels] key may be.
var labelKeyRe = regexp.MustCompile(`^[A-Za-z0-9_.\-]+$`)

// Validate reports every problem at once (errors.Join), each naming file:line and the key in
// brackets. The error carries [exitcode.InvalidConfig].
func (c *Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: [%s] %s", c.Where(key), key, fmt.Sprintf(format, args...)))
	}
	if c.Target != Builtin {
		if err := checkURL(c.Target); err != nil {
			bad("target", "%v (want \"builtin\" or a base URL such as http://127.0.0.1:8000)", err)
		}
	}
	if c.MaxTokens < 1 {
		bad("max_tokens", "must be ≥ 1, got %d", c.MaxTokens)
	}
	if c.Context != 0 && c.MaxTokens >= c.Context {
		bad("max_tokens", "%d leaves no room for a prompt in context %d", c.MaxTokens, c.Context)
	}
	if c.DraftTokens < 0 {
		bad("draft_tokens", "must be ≥ 0, got %d", c.DraftTokens)
	}
	switch c.TokenCounts {
	case TokenCountsAuto, TokenCountsUsage, TokenCountsLogprobs:
	default:
		bad("token_counts", "unknown value %q (want \"auto\", \"usage\" or \"logprobs\")", c.TokenCounts)
	}
	if c.Truncation != "error" && c.Truncation != "warn" {
		bad("truncation", "unknown value %q (want \"error\" or \"warn\")", c.Truncation)
	}
	switch c.Run.OnError {
	case "", OnErrorStop, OnErrorContinue:
	default:
		bad("run.on_error", "unknown value %q (want \"stop\" or \"continue\")", c.Run.OnError)
	}
	if c.Metrics != "auto" && c.Metrics != "off" {
		bad("metrics", "unknown value %q (want \"auto\" or \"off\")", c.Metrics)
	}
	if c.Temperature < 0 {
		bad("temperature", "must be ≥ 0, got %g", c.Temperature)
	}
	switch c.Mode {
	case ModeArray, ModeRouted, ModeN, ModeAuto:
	default:
		bad("mode", "unknown mode %q (want \"array\", \"routed\", \"n\" or \"auto\")", c.Mode)
	}
	if c.Out == "" {
		bad("out", "must name a directory")
	}
	m := c.Matrix
	if !m.AutoSeqLens {
		for _, l := range m.SeqLens {
			if l < 1 {
				bad("matrix.seq_lens", "sequence lengths must be ≥ 1 token, got %d", l)
			}
		}
	} else if m.MinSeqLen < 1 {
		bad("matrix.min_seq_len", "must be ≥ 1 token, got %d", m.MinSeqLen)
	}
	for _, b := range m.BatchSizes {
		if b < 1 {
			bad("matrix.batch_sizes", "batch sizes must be ≥ 1, got %d", b)
		}
	}
	for i, p := range m.Pairs {
		if len(p) != 2 || p[0] < 1 || p[1] < 1 {
			bad("matrix.pairs", "pair %d must be [seq_len, batch] with both ≥ 1, got %v", i, p)
		}
	}
	gridEmpty := (len(m.SeqLens) == 0 && !m.AutoSeqLens) || len(m.BatchSizes) == 0
	if gridEmpty && len(m.Pairs) == 0 {
		bad("matrix", "no cells: give seq_lens and batch_sizes, auto_seq_lens, or pairs")
	}
	if m.MaxKVCacheEntries < 0 {
		bad("matrix.max_kv_cache_entries", "must be ≥ 0 tokens, got %d", m.MaxKVCacheEntries)
	}
	if c.Lengths.Plugin == "" {
		bad("lengths.plugin", "must name a length plugin (e.g. \"gamma\", \"uniform\") or a .wasm path")
	}
	if c.Lengths.MinLen < 0 {
		bad("lengths.min_len", "must be ≥ 0 tokens, got %d", c.Lengths.MinLen)
	}
	if (c.Mode == ModeRouted || c.Mode == ModeAuto) && c.Router.Plugin == "" {
		bad("router.plugin", "%s mode needs a router plugin (e.g. \"router-rr\")", c.Mode)
	}
	seen := map[string]int{}
	for i, w := range c.Workers {
		key := fmt.Sprintf("workers.%d", i)
		if w.URL != "" {
			if err := checkURL(w.URL); err != nil {
				bad("workers", "worker %d: %v", i, err)
			}
		}
		id := w.URL + "\x00" + fmt.Sprint(sortedHeaders(w.Headers))
		if j, dup := seen[id]; dup {
			bad("workers", "worker %d duplicates worker %d (same url and headers)", i, j)
		}
		seen[id] = i
		_ = key
	}
	if g := c.Grid; g.Servers != 0 {
		if len(c.Workers) > 0 {
			bad("worker_grid", "give either [[workers]] or [worker_grid], not both")
		}
		if g.Servers < 0 || g.Generators < 1 {
			bad("worker_grid", "servers must be ≥ 1 and generators ≥ 1, got %d × %d", g.Servers, g.Generators)
		}
		if len(g.ServerURLs) != 0 && len(g.ServerURLs) != g.Servers {
			bad("worker_grid.server_urls", "has %d URLs for %d servers", len(g.ServerURLs), g.Servers)
		}
		for _, u := range g.ServerURLs {
			if err := checkURL(u); err != nil {
				bad("worker_grid.server_urls", "%v", err)
			}
		}
	}
	if c.Mode != ModeRouted && c.Mode != ModeAuto && (len(c.Workers) > 1 || c.Grid.Servers*max(c.Grid.Generators, 1) > 1) {
		bad("mode", "several workers are configured but mode is %q; routing needs mode = \"routed\" (or \"auto\")", c.Mode)
	}
	if c.Prompt.Suffix == "" {
		bad("prompt.suffix", "must not be empty: every prompt ends with the analysis instruction")
	}
	switch c.Prompt.Format {
	case FormatTokens, FormatText, FormatAuto:
	default:
		bad("prompt.format", "unknown format %q (want \"tokens\", \"text\" or \"auto\")", c.Prompt.Format)
	}
	if c.Warmup.Retries < 0 {
		bad("warmup.retries", "must be ≥ 0, got %d", c.Warmup.Retries)
	}
	// A list, not a map: the errors come in the same order every time (the file's order).
	for _, d := range []struct {
		key string
		d   Duration
	}{{"warmup.retry_delay", c.Warmup.RetryDelay}, {"timeouts.connect", c.Timeouts.Connect},
		{"timeouts.first_token", c.Timeouts.FirstToken}, {"timeouts.total", c.Timeouts.Total},
		{"timeouts.stall_min", c.Timeouts.StallMin}, {"timeouts.stall", c.Timeouts.Stall}, {"plugins.call_timeout", c.Plugins.CallTimeout}} {
		if d.d.Duration < 0 {
			bad(d.key, "must be ≥ 0, got %v", d.d.Duration)
		}
	}
	if c.Timeouts.StallSteps < 0 {
		bad("timeouts.stall_steps", "must be ≥ 0 steps (0 disables the rule), got %d", c.Timeouts.StallSteps)
	}
	if c.Plugins.MemoryLimitMiB < 1 || c.Plugins.MemoryLimitMiB > 4096 {
		bad("plugins.memory_limit_mib", "must be in [1, 4096] MiB, got %d", c.Plugins.MemoryLimitMiB)
	}
	for _, k := range sortedKeys(c.Labels) {
		switch v := c.Labels[k].(type) {
		case string, int64:
		case float64: // a stored config read back from a results file's JSON
			if v != math.Trunc(v) || math.IsInf(v, 0) {
				bad("labels."+k, "must be a string or an integer, got %v", v)
			}
		default:
			bad("labels."+k, "must be a string or an integer, got %T %v", v, v)
		}
		if !labelKeyRe.MatchString(k) {
			bad("labels."+k, "key must be letters, digits, '_', '-' or '.'")
		}
	}
	if c.Engine.TimeScale < 0 {
		bad("engine.time_scale", "must be ≥ 0, got %g", c.Engine.TimeScale)
	}
	if len(errs) == 0 {
		return nil
	}
	return exitcode.With(exitcode.InvalidConfig, errors.Join(errs...))
}

func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("bad URL %q: %v", s, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("bad URL %q: scheme must be http or https", s)
	}
	if u.Host == "" {
		return fmt.Errorf("bad URL %q: no host", s)
	}
	return nil
}

func sortedHeaders(h map[string]string) []string {
	out := make([]string, 0, len(h))
	for k, v := range h {
		out = append(out, strings.ToLower(k)+"="+v)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// sortedKeys returns m's keys in ascending order (for messages in a stable order).
func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
