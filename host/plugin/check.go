package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/genload/genload/sdk/abi"
)

// Report is the result of Check: what `genload plugin check FILE.wasm` prints.
type Report struct {
	// Path, Size (bytes) and Info describe the plugin; Info is filled once genload_info ran.
	Path string
	Size int
	Info Info
	// Imports and Exports are the module's function imports ("module.name") and exports.
	Imports, Exports []string
	// Compile is the time to compile (or load from the compilation cache); Load the time to
	// instantiate, run _initialize, read the info and init.
	Compile, Load time.Duration
	// Trial describes the trial call and TrialOut is its result: lengths or worker indices.
	Trial    string
	TrialOut []int
	// Steps lists each check with its outcome, in order; the failing one is last.
	Steps []Step
}

// Step is one line of a Report.
type Step struct {
	// Name is the check, e.g. "exports".
	Name string
	// OK is false for the failing step.
	OK bool
	// Detail says what was found.
	Detail string
}

// Check validates a plugin file or name the way a run would load it, and reports every step:
//
//   - file, compile: it is a WebAssembly module;
//   - abi: the static checks (imports, marker, every signature, memory, kind);
//   - load: instantiation, info and init with config (nil for none);
//   - trial: lengths(64, mean 1000, [1, 32768]) for a length distribution, route of 8 prompts
//     (100…800 tokens) over 4 workers for a router;
//   - edges: an empty batch, and lengths(3, mean 5000, [10, 20]) or a route over 1 worker;
//   - completions (routers with capability "completions" only): the trial's requests reported
//     finished through genload_on_complete (the last one failed), then a second route;
//   - repeat: a second instance gives the same trial output (determinism);
//   - pure (length distributions with capability "pure" only): the trial call repeated on both
//     instances gives the same lengths, since the host caches a pure plugin's answer per cell;
//   - config: an unknown config key is rejected with status 1.
//
// It returns the report so far and the first error if a step fails.
func (h *Host) Check(ctx context.Context, nameOrPath string, config map[string]any) (*Report, error) {
	r := &Report{Path: nameOrPath}
	fail := func(name string, err error) (*Report, error) {
		r.Steps = append(r.Steps, Step{Name: name, Detail: err.Error()})
		return r, err
	}
	src, err := Locate(nameOrPath, h.opts.Dir)
	if err != nil {
		return fail("file", err)
	}
	path := src.Path
	r.Path, r.Size = path, len(src.Wasm)
	t0 := time.Now()
	m, err := h.openSource(ctx, src, "")
	r.Compile = time.Since(t0)
	if m != nil {
		r.Imports, r.Exports = m.imports, m.exports
	}
	if err != nil && m == nil {
		return fail("compile", err)
	}
	if err != nil {
		return fail("abi", err)
	}
	r.Steps = append(r.Steps,
		Step{Name: "file", OK: true, Detail: fmt.Sprintf("%s, %d bytes, sha256 %x", path, r.Size, m.sum[:8])},
		Step{Name: "compile", OK: true, Detail: fmt.Sprintf("%v (compilation cache %s)", r.Compile.Round(time.Millisecond), h.opts.CacheDir)},
		Step{Name: "abi", OK: true, Detail: fmt.Sprintf("v%d marker, %d exports with exact signatures, imports only %s, kind %s", abi.Major, len(m.exports), abi.WASIModule, m.kind)})
	t0 = time.Now()
	in, err := h.instantiate(ctx, m, config)
	r.Load = time.Since(t0)
	if err != nil {
		return fail("load", err)
	}
	defer func() { in.mu.Lock(); in.close(ctx); in.mu.Unlock() }()
	r.Info = in.info
	r.Steps = append(r.Steps, Step{Name: "load", OK: true, Detail: fmt.Sprintf("%s %s, kind %s, abi_minor %d, caps %v; instantiate + init %v",
		in.info.Name, in.info.Version, in.info.Kind, in.info.ABIMinor, in.info.Caps, r.Load.Round(time.Microsecond))})
	switch m.kind {
	case abi.KindLengths:
		r.Trial = "lengths(n=64, mean=1000, min=1, max=32768)"
		r.TrialOut, err = (&LengthsPlugin{in: in}).Lengths(ctx, 64, 1000, 1, 32768)
	case abi.KindRouter:
		r.Trial = "route(8 prompts of 100…800 tokens, 4 workers)"
		r.TrialOut, err = (&RouterPlugin{in: in}).Route(ctx, []int{100, 200, 300, 400, 500, 600, 700, 800}, 4)
	}
	if err != nil {
		return fail("trial", err)
	}
	detail := fmt.Sprintf("%s = %v", r.Trial, r.TrialOut)
	if m.kind == abi.KindLengths {
		detail = fmt.Sprintf("%s: %s", r.Trial, Summarize(r.TrialOut))
	}
	r.Steps = append(r.Steps, Step{Name: "trial", OK: true, Detail: detail})

	// Edge cases: an empty batch, and a cell whose mean lies outside [min, max] (lengths) or a
	// single worker (router); the host validates count and range.
	var edge string
	switch m.kind {
	case abi.KindLengths:
		lp := &LengthsPlugin{in: in}
		edge = "lengths(n=0) = [], lengths(n=3, mean=5000, min=10, max=20) within [10, 20]"
		if _, err = lp.Lengths(ctx, 0, 1000, 1, 32768); err == nil {
			_, err = lp.Lengths(ctx, 3, 5000, 10, 20)
		}
	case abi.KindRouter:
		rp := &RouterPlugin{in: in}
		edge = "route(0 prompts) = [], route(3 prompts, 1 worker) = [0 0 0]"
		if _, err = rp.Route(ctx, nil, 4); err == nil {
			_, err = rp.Route(ctx, []int{1, 2, 3}, 1)
		}
	}
	if err != nil {
		return fail("edges", err)
	}
	r.Steps = append(r.Steps, Step{Name: "edges", OK: true, Detail: edge})

	// A router that takes completions gets the trial's 8 requests back (the last one failed),
	// then routes again, as a routed run does after each cell.
	if m.kind == abi.KindRouter && in.info.HasCap(abi.CapCompletions) {
		rp := &RouterPlugin{in: in}
		done := make([]Completion, len(r.TrialOut))
		for i, w := range r.TrialOut {
			done[i] = Completion{Worker: w, PromptLen: 100 * (i + 1), CompletionTokens: 100}
		}
		done[len(done)-1].Failed, done[len(done)-1].CompletionTokens = true, 0
		if err = rp.Complete(ctx, done); err == nil {
			_, err = rp.Route(ctx, []int{100, 200, 300, 400, 500, 600, 700, 800}, 4)
		}
		if err != nil {
			return fail("completions", err)
		}
		r.Steps = append(r.Steps, Step{Name: "completions", OK: true,
			Detail: fmt.Sprintf("%s(8 finished requests, the last failed), then route again", abi.OnComplete)})
	}

	// Determinism: a fresh instance with the same seed and config answers the trial call with
	// the same values (sdk/ABI.md §7).
	in2, err := h.instantiate(ctx, m, config)
	if err != nil {
		return fail("repeat", err)
	}
	var again []int
	switch m.kind {
	case abi.KindLengths:
		again, err = (&LengthsPlugin{in: in2}).Lengths(ctx, 64, 1000, 1, 32768)
	case abi.KindRouter:
		again, err = (&RouterPlugin{in: in2}).Route(ctx, []int{100, 200, 300, 400, 500, 600, 700, 800}, 4)
	}
	defer func() { in2.mu.Lock(); in2.close(ctx); in2.mu.Unlock() }()
	if err == nil && !slices.Equal(again, r.TrialOut) {
		err = in.errf("", "a plugin must give the same output for the same seed, config and calls (sdk/ABI.md §7)",
			"a second instance answered the trial call with %v, the first with %v", again, r.TrialOut)
	}
	if err != nil {
		return fail("repeat", err)
	}
	r.Steps = append(r.Steps, Step{Name: "repeat", OK: true, Detail: "a second instance gives the same trial output"})

	// Purity: the host calls a "pure" length distribution once per distinct cell and caches the
	// answer (sdk/ABI.md §4.7), so the trial call must give the same lengths again on the first
	// instance (after the edge calls) and on the second (right after its first call). A plugin
	// whose output moves with a call counter passes the repeat step but not this one.
	if m.kind == abi.KindLengths && in.info.HasCap(abi.CapPure) {
		for _, c := range []struct {
			in   *instance
			what string
		}{{in, "the first instance, after the edge calls"}, {in2, "the second instance"}} {
			got, err := (&LengthsPlugin{in: c.in}).Lengths(ctx, 64, 1000, 1, 32768)
			if err == nil {
				err = impure(in, "n=64, mean=1000, min=1, max=32768", got, r.TrialOut, c.what)
			}
			if err != nil {
				return fail("pure", err)
			}
		}
		r.Steps = append(r.Steps, Step{Name: "pure", OK: true, Detail: "capability pure: the trial call again, on both instances, gives the same lengths"})
	}

	// Strict config: an unknown key must be rejected with status 1 at init (sdk/ABI.md §6.2).
	strict := map[string]any{checkUnknownKey: true}
	for k, v := range config {
		strict[k] = v
	}
	in3, err := h.instantiate(ctx, m, strict)
	if err == nil {
		in3.mu.Lock()
		in3.close(ctx)
		in3.mu.Unlock()
		return fail("config", in.errf(abi.Init, "reject unknown config keys with status 1 so typos in bench.toml fail at load (sdk/ABI.md §6.2)",
			"accepted the unknown config key %q", checkUnknownKey))
	}
	var pe *Error
	if !errors.As(err, &pe) || pe.Status != abi.BadInput {
		return fail("config", fmt.Errorf("unknown config key %q: want status 1 (bad input) at %s, got: %w", checkUnknownKey, abi.Init, err))
	}
	r.Steps = append(r.Steps, Step{Name: "config", OK: true, Detail: fmt.Sprintf("unknown key rejected: %s", pe.Err)})
	return r, nil
}

// impure returns an error naming genload_lengths, its arguments args ("n=64, mean=1000, …") and
// the first index where got (the call repeated on what) differs from want (the first call), or
// nil if they are equal. Check's pure step and a run's (LengthsPlugin.VerifyPure) give it.
func impure(in *instance, args string, got, want []int, what string) error {
	i := 0
	for i < min(len(got), len(want)) && got[i] == want[i] {
		i++
	}
	if i == len(got) && i == len(want) {
		return nil
	}
	at := func(v []int) string {
		if i < len(v) {
			return strconv.Itoa(v[i])
		}
		return "none"
	}
	return in.errf(abi.Lengths, "drop capability \"pure\" or make the lengths depend only on the call's parameters (sdk/ABI.md §4.7): the host caches a pure plugin's answer per cell",
		"declares capability \"pure\" but %s(%s) changed between calls: on %s length %d is %s, on the first call %s (first call %s, this call %s)",
		abi.Lengths, args, what, i, at(got), at(want), head(want), head(got))
}

// head formats the first 8 values of v, and how many there are when there are more:
// "[1000 1000 1000 1000 1000 1000 1000 1000 … 64 values]".
func head(v []int) string {
	if len(v) <= 8 {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(fmt.Sprint(v[:8]), "]") + fmt.Sprintf(" … %d values]", len(v))
}

// checkUnknownKey is the config key Check adds to verify that a plugin rejects unknown keys.
const checkUnknownKey = "genload_check_unknown_key"

// WriteText prints the report, one "ok"/"FAIL" line per step.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	for _, s := range r.Steps {
		mark := "ok  "
		if !s.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(&b, "%s %-8s %s\n", mark, s.Name, s.Detail)
	}
	if len(r.Exports) > 0 {
		fmt.Fprintf(&b, "exports: %s\n", strings.Join(r.Exports, " "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// ParseSet turns `--set key=value` flags into a plugin config table. Values are parsed as TOML
// values (k=0.9 → float 0.9, n=3 → int 3, on=true → bool, edges=[1,2] → array, name="x" →
// string); a value that is not valid TOML is taken as a plain string (name=x → "x"). A later
// flag for the same key wins. It returns an error for a flag without '=' or with an empty key.
func ParseSet(flags []string) (map[string]any, error) {
	cfg := map[string]any{}
	for _, f := range flags {
		k, v, ok := strings.Cut(f, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("--set %q: want key=value", f)
		}
		var doc map[string]any
		if _, err := toml.Decode("v = "+v, &doc); err == nil {
			if err := finite(doc["v"]); err != nil {
				return nil, fmt.Errorf("--set %s: %w", f, err)
			}
			cfg[k] = doc["v"]
		} else if _, perr := strconv.ParseFloat(strings.TrimSpace(v), 64); errors.Is(perr, strconv.ErrRange) {
			return nil, fmt.Errorf("--set %s: number out of the range of a float64", f)
		} else {
			cfg[k] = v
		}
	}
	return cfg, nil
}

// finite reports a NaN or infinity anywhere in a decoded TOML value: a plugin's config is sent
// as JSON, which has neither.
func finite(v any) error {
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("%v is not a finite number (a plugin's config is JSON, which has no NaN or infinity)", x)
		}
	case []any:
		for _, e := range x {
			if err := finite(e); err != nil {
				return err
			}
		}
	case []map[string]any:
		for _, e := range x {
			if err := finite(e); err != nil {
				return err
			}
		}
	case map[string]any:
		for _, e := range x {
			if err := finite(e); err != nil {
				return err
			}
		}
	}
	return nil
}
