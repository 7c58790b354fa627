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
	"github.com/genload/genload/host/internal/tomlwords"
)

// labelKeyRe is what a [labels] key may be.
var labelKeyRe = regexp.MustCompile(`^[A-Za-z0-9_.\-]+$`)

// Validate reports every problem at once (errors.Join), each naming file:line and the key in
// brackets, in the file's order of sections: the request settings, the matrix, the plugins,
// the workers, the prompt, warm-up and timeouts, the labels, the engine. The error carries
// [exitcode.InvalidConfig].
func (c *Config) Validate() error {
	v := &validation{c: c}
	v.request()
	v.matrix()
	v.plugins()
	v.workers()
	v.prompt()
	v.timeouts()
	v.labels()
	if c.Engine.TimeScale < 0 {
		v.bad("engine.time_scale", "must be ≥ 0, got %g", c.Engine.TimeScale)
	}
	if c.Engine.SpinWait.Duration < 0 {
		v.bad("engine.spin_wait", "must be ≥ 0, got %v", c.Engine.SpinWait.Duration)
	}
	if len(v.errs) == 0 {
		return nil
	}
	return exitcode.With(exitcode.InvalidConfig, errors.Join(v.errs...))
}

// validation collects Validate's problems, each with the key's file:line.
type validation struct {
	c    *Config
	errs []error
}

// bad records the problem of key: format and args say what is wrong.
func (v *validation) bad(key, format string, args ...any) {
	v.errs = append(v.errs, fmt.Errorf("%s: [%s] %s", v.c.Where(key), key, fmt.Sprintf(format, args...)))
}

// request checks the target and the settings of every request: max_tokens against the
// context, draft_tokens, token_counts, truncation, on_error, remeasure_overrun, metrics,
// temperature, mode, out.
func (v *validation) request() {
	c := v.c
	if c.Target != Builtin {
		if err := checkURL(c.Target); err != nil {
			v.bad("target", "%v (want \"builtin\" or a base URL such as http://127.0.0.1:8000)", err)
		}
	}
	if c.MaxTokens < 1 {
		v.bad("max_tokens", "must be ≥ 1, got %d", c.MaxTokens)
	}
	if c.Context != 0 && c.MaxTokens >= c.Context {
		v.bad("max_tokens", "%d leaves no room for a prompt in context %d", c.MaxTokens, c.Context)
	}
	if c.DraftTokens < 0 {
		v.bad("draft_tokens", "must be ≥ 0, got %d", c.DraftTokens)
	}
	switch c.TokenCounts {
	case TokenCountsAuto, TokenCountsUsage, TokenCountsLogprobs:
	default:
		v.bad("token_counts", "unknown value %q (want \"auto\", \"usage\" or \"logprobs\")", c.TokenCounts)
	}
	if c.Truncation != "error" && c.Truncation != "warn" {
		v.bad("truncation", "unknown value %q (want \"error\" or \"warn\")", c.Truncation)
	}
	if n := c.Run.RemeasureOverrun; n < 0 || n > MaxRemeasureOverrun {
		v.bad("run.remeasure_overrun", "must be in [0, %d], got %d", MaxRemeasureOverrun, n)
	}
	switch c.Run.OnError {
	case "", OnErrorStop, OnErrorContinue:
	default:
		v.bad("run.on_error", "unknown value %q (want \"stop\" or \"continue\")", c.Run.OnError)
	}
	if c.Metrics != "auto" && c.Metrics != "off" {
		v.bad("metrics", "unknown value %q (want \"auto\" or \"off\")", c.Metrics)
	}
	if c.Temperature < 0 {
		v.bad("temperature", "must be ≥ 0, got %g", c.Temperature)
	}
	switch c.Mode {
	case ModeArray, ModeRouted, ModeN, ModeAuto:
	default:
		v.bad("mode", "unknown mode %q (want \"array\", \"routed\", \"n\" or \"auto\")", c.Mode)
	}
	if c.Out == "" {
		v.bad("out", "must name a directory")
	}
}

// matrix checks that [matrix] names cells: sequence lengths, batch sizes and pairs ≥ 1, and
// a KV cache bound ≥ 0.
func (v *validation) matrix() {
	c := v.c
	m := c.Matrix
	if !m.AutoSeqLens {
		for _, l := range m.SeqLens {
			if l < 1 {
				v.bad("matrix.seq_lens", "sequence lengths must be ≥ 1 token, got %d", l)
			}
		}
	} else if m.MinSeqLen < 1 {
		v.bad("matrix.min_seq_len", "must be ≥ 1 token, got %d", m.MinSeqLen)
	}
	for _, b := range m.BatchSizes {
		if b < 1 {
			v.bad("matrix.batch_sizes", "batch sizes must be ≥ 1, got %d", b)
		}
	}
	if !m.AutoSeqLens {
		if d, ok := repeated(m.SeqLens); ok {
			v.bad("matrix.seq_lens", "lists %d twice: give each sequence length once", d)
		}
	}
	if d, ok := repeated(m.BatchSizes); ok {
		v.bad("matrix.batch_sizes", "lists %d twice: give each batch size once", d)
	}
	for i, p := range m.Pairs {
		if len(p) != 2 || p[0] < 1 || p[1] < 1 {
			v.bad("matrix.pairs", "pair %d must be [seq_len, batch] with both ≥ 1, got %v", i, p)
		}
	}
	gridEmpty := (len(m.SeqLens) == 0 && !m.AutoSeqLens) || len(m.BatchSizes) == 0
	if gridEmpty && len(m.Pairs) == 0 {
		v.bad("matrix", "no cells: give seq_lens and batch_sizes, auto_seq_lens, or pairs")
	}
	if m.MaxKVCacheEntries < 0 {
		v.bad("matrix.max_kv_cache_entries", "must be ≥ 0 tokens, got %d", m.MaxKVCacheEntries)
	}
}

// plugins checks that a length plugin is named, min_len ≥ 0, and a router for the modes
// that route.
func (v *validation) plugins() {
	c := v.c
	if c.Lengths.Plugin == "" {
		v.bad("lengths.plugin", "must name a length plugin (e.g. \"gamma\", \"uniform\") or a .wasm path")
	}
	if c.Lengths.MinLen < 0 {
		v.bad("lengths.min_len", "must be ≥ 0 tokens, got %d", c.Lengths.MinLen)
	}
	if (c.Mode == ModeRouted || c.Mode == ModeAuto) && c.Router.Plugin == "" {
		v.bad("router.plugin", "%s mode needs a router plugin (e.g. \"router-rr\")", c.Mode)
	}
}

// workers checks [[workers]] (URLs, none twice) and [worker_grid] (not with [[workers]], a
// size ≥ 1 × 1, a URL per server), and that several workers come with a routing mode.
func (v *validation) workers() {
	c := v.c
	seen := map[string]int{}
	for i, w := range c.Workers {
		if w.URL != "" {
			if err := checkURL(w.URL); err != nil {
				v.bad("workers", "worker %d: %v", i, err)
			}
		}
		id := w.URL + "\x00" + fmt.Sprint(sortedHeaders(w.Headers))
		if j, dup := seen[id]; dup {
			v.bad("workers", "worker %d duplicates worker %d (same url and headers)", i, j)
		}
		seen[id] = i
	}
	if g := c.Grid; g.Servers != 0 {
		if len(c.Workers) > 0 {
			v.bad("worker_grid", "give either [[workers]] or [worker_grid], not both")
		}
		if g.Servers < 0 || g.Generators < 1 {
			v.bad("worker_grid", "servers must be ≥ 1 and generators ≥ 1, got %d × %d", g.Servers, g.Generators)
		}
		if len(g.ServerURLs) != 0 && len(g.ServerURLs) != g.Servers {
			v.bad("worker_grid.server_urls", "has %d URLs for %d servers", len(g.ServerURLs), g.Servers)
		}
		for _, u := range g.ServerURLs {
			if err := checkURL(u); err != nil {
				v.bad("worker_grid.server_urls", "%v", err)
			}
		}
	}
	if c.Mode != ModeRouted && c.Mode != ModeAuto && (len(c.Workers) > 1 || c.Grid.Servers*max(c.Grid.Generators, 1) > 1) {
		v.bad("mode", "several workers are configured but mode is %q; routing needs mode = \"routed\" (or \"auto\")", c.Mode)
	}
}

// prompt checks [prompt]: a suffix and a known format.
func (v *validation) prompt() {
	c := v.c
	if c.Prompt.Suffix == "" {
		v.bad("prompt.suffix", "must not be empty: every prompt ends with the analysis instruction")
	}
	switch c.Prompt.Format {
	case FormatTokens, FormatText, FormatAuto:
	default:
		v.bad("prompt.format", "unknown format %q (want \"tokens\", \"text\" or \"auto\")", c.Prompt.Format)
	}
}

// timeouts checks warm-up retries, every duration (≥ 0), stall_steps and the plugins'
// memory limit.
func (v *validation) timeouts() {
	c := v.c
	if c.Warmup.Retries < 0 {
		v.bad("warmup.retries", "must be ≥ 0, got %d", c.Warmup.Retries)
	}
	// A list, not a map: the errors come in the same order every time (the file's order).
	for _, d := range []struct {
		key string
		d   Duration
	}{{"warmup.retry_delay", c.Warmup.RetryDelay}, {"timeouts.connect", c.Timeouts.Connect},
		{"timeouts.first_token", c.Timeouts.FirstToken}, {"timeouts.total", c.Timeouts.Total},
		{"timeouts.stall_min", c.Timeouts.StallMin}, {"timeouts.stall", c.Timeouts.Stall}, {"plugins.call_timeout", c.Plugins.CallTimeout}} {
		if d.d.Duration < 0 {
			v.bad(d.key, "must be ≥ 0, got %v", d.d.Duration)
		}
	}
	if c.Timeouts.StallSteps < 0 {
		v.bad("timeouts.stall_steps", "must be ≥ 0 steps (0 disables the rule), got %d", c.Timeouts.StallSteps)
	}
	if c.Plugins.MemoryLimitMiB < 1 || c.Plugins.MemoryLimitMiB > 4096 {
		v.bad("plugins.memory_limit_mib", "must be in [1, 4096] MiB, got %d", c.Plugins.MemoryLimitMiB)
	}
}

// labels checks each [labels] value (a string or an integer) and key (letters, digits, '_',
// '-', '.'), in sorted key order.
func (v *validation) labels() {
	c := v.c
	for _, k := range sortedKeys(c.Labels) {
		switch x := c.Labels[k].(type) {
		case string, int64:
		case float64: // a stored config read back from a results file's JSON
			if x != math.Trunc(x) || math.IsInf(x, 0) {
				v.bad("labels."+k, "must be a string or an integer, not %s", tomlwords.Value(x))
			}
		default:
			v.bad("labels."+k, "must be a string or an integer, not %s", tomlwords.Value(x))
		}
		if !labelKeyRe.MatchString(k) {
			v.bad("labels."+k, "key must be letters, digits, '_', '-' or '.'")
		}
	}
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

// repeated returns the first value of xs that appears in it twice.
func repeated(xs []int) (int, bool) {
	seen := map[int]bool{}
	for _, x := range xs {
		if seen[x] {
			return x, true
		}
		seen[x] = true
	}
	return 0, false
}
