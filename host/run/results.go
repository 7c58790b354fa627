package run

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/engine"
	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/results"
)

// sameRun checks that a resumed run is the one that was started: same configuration (the
// file path aside) and same cells. The error lists every difference as it is written in a
// bench.toml — "[engine] time_scale: 1 → not set (default 0.05)" — and the cells as counts
// and the cells only one side has, not their JSON. Keys the stored configuration lacks (added
// to genload since) are not compared, and a key stored as "auto" matches what the capability
// probe resolved it to now. moved leaves [target] out (Options.ResumeMoved).
func sameRun(before, now results.Header, moved bool) error {
	flat := func(h results.Header) map[string]string {
		c := *h.Config
		c.File = ""
		if moved {
			c.Target = ""
		}
		c.Run = config.RunTable{} // what a failed cell does is not what a cell measures
		b, _ := json.Marshal(struct {
			Config    config.Config
			Tokenizer string
			Corpus    string
		}{c, h.Tokenizer, h.Corpus})
		var v any
		_ = json.Unmarshal(b, &v)
		out := map[string]string{}
		var walk func(prefix string, v any)
		walk = func(prefix string, v any) {
			switch x := v.(type) {
			case map[string]any:
				for k, e := range x {
					walk(strings.TrimPrefix(prefix+"."+k, "."), e)
				}
			default:
				j, _ := json.Marshal(x)
				out[prefix] = string(j)
			}
		}
		walk("", v)
		return out
	}
	if before.Config == nil {
		return errors.New("its header has no config")
	}
	a, b := flat(before), flat(now)
	var diffs []string
	// Only the stored keys are compared: a key the stored configuration lacks was added to
	// genload after the run was started, so the run did not have it (the results schema's
	// compatibility rule: new keys are optional for readers of older files).
	for k, va := range a {
		vb, ok := b[k]
		if ok && va == `"auto"` && now.Config.Chosen[strings.TrimPrefix(k, "Config.")] != "" {
			continue // "auto" then, resolved by the probe now
		}
		if !ok || va != vb {
			diffs = append(diffs, fmt.Sprintf("%s: %s → %s", tomlKey(k), tomlValue(k, va), tomlValue(k, b[k])))
		}
	}
	if d := cellsDiff(before.Cells, now.Cells); d != "" {
		diffs = append(diffs, d)
	}
	if len(diffs) == 0 {
		return nil
	}
	sort.Strings(diffs)
	return fmt.Errorf("the configuration differs from the run's (before → now):\n  %s", strings.Join(diffs, "\n  "))
}

// tomlKey writes a flattened key of sameRun as bench.toml spells it: "Config.engine.time_scale"
// → "[engine] time_scale", "Config.max_tokens" → "max_tokens"; the header's "Tokenizer" and
// "Corpus" (what the run resolved) → "the tokenizer", "the corpus".
func tomlKey(k string) string {
	switch k {
	case "Tokenizer":
		return "the tokenizer"
	case "Corpus":
		return "the corpus"
	}
	k = strings.TrimPrefix(k, "Config.")
	if i := strings.LastIndexByte(k, '.'); i >= 0 {
		return "[" + k[:i] + "] " + k[i+1:]
	}
	return k
}

// tomlValue writes the JSON value v of flattened key k as TOML would, and a zero value as
// "not set", with the built-in engine's default where it has one ([engine] time_scale,
// max_model_len, profile).
func tomlValue(k, v string) string {
	switch v {
	case "", "0", `""`, "null", "[]", "{}":
		d := engine.DefaultConfig()
		switch k {
		case "Config.engine.time_scale":
			return fmt.Sprintf("not set (default %g)", d.TimeScale)
		case "Config.engine.max_model_len":
			return fmt.Sprintf("not set (default %d)", d.MaxModelLen)
		case "Config.engine.profile":
			return fmt.Sprintf("not set (default %q)", d.Profile)
		}
		if v == "" {
			return "absent"
		}
		return "not set"
	}
	return v
}

// cellsDiff says how two runs' cell lists differ ("" when they do not): their counts and up to
// four cells only one side has, by their L,B keys.
func cellsDiff(before, now []matrix.Cell) string {
	if slices.Equal(before, now) {
		return ""
	}
	keys := func(cs []matrix.Cell) map[string]bool {
		m := map[string]bool{}
		for _, c := range cs {
			m[c.Key()] = true
		}
		return m
	}
	kb, kn := keys(before), keys(now)
	only := func(cs []matrix.Cell, other map[string]bool) string {
		var out []string
		for _, c := range cs {
			if !other[c.Key()] {
				out = append(out, c.Key())
			}
		}
		if len(out) > 4 {
			out = append(out[:4], fmt.Sprintf("… %d more", len(out)-4))
		}
		return strings.Join(out, " ")
	}
	s := fmt.Sprintf("the cells: %d → %d", len(before), len(now))
	if o := only(before, kn); o != "" {
		s += "; only before: " + o
	}
	if o := only(now, kb); o != "" {
		s += "; only now: " + o
	}
	if !strings.Contains(s, "only") {
		s += " (the same L,B cells, in another order or from other corpus rows)"
	}
	return s
}

// openResults creates the run's JSONL file — or, with opt.Resume, opens the earlier run's for
// appending after checking it is the same run — and returns the indices of cells already
// measured. A default run id that exists already gets a -2, -3, … suffix.
func openResults(cfg *config.Config, header results.Header, opt Options, autoID bool, cells int) (*results.Writer, map[int]bool, error) {
	done := map[int]bool{}
	if opt.Resume != "" {
		w, err := results.Resume(opt.Resume)
		if err != nil {
			return nil, nil, exitcode.With(exitcode.InvalidConfig, err)
		}
		if err := sameRun(w.Run().Header, header, opt.ResumeMoved); err != nil {
			return nil, nil, exitcode.With(exitcode.InvalidConfig, fmt.Errorf("cannot resume %s: %w", opt.Resume, err))
		}
		for _, c := range w.Run().Cells {
			if results.Measured(c.Status) {
				done[c.Cell.Index] = true
			}
		}
		fmt.Fprintf(opt.Stderr, "resuming %s: %d of %d cells already measured\n", opt.Resume, len(done), cells)
		return w, done, nil
	}
	for i := 2; ; i++ {
		w, err := results.Create(cfg.Out, header)
		switch {
		case err == nil:
			return w, done, nil
		case !errors.Is(err, os.ErrExist):
			return nil, nil, err
		case !autoID || i > 100:
			return nil, nil, exitcode.With(exitcode.InvalidConfig, fmt.Errorf("%w: choose another --run-id, or continue that run with --resume", err))
		}
		header.RunID = fmt.Sprintf("%s-%d", opt.RunID, i)
	}
}
