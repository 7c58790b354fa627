package run

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/results"
)

// sameRun checks that a resumed run is the one that was started: same configuration (the
// file path aside) and same cells. The error lists every difference as key: before → now.
// Keys the stored configuration lacks (added to genload since) are not compared, and a key
// stored as "auto" matches what the capability probe resolved it to now. moved leaves
// [target] out (Options.ResumeMoved).
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
			Cells     []matrix.Cell
		}{c, h.Tokenizer, h.Corpus, h.Cells})
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
			diffs = append(diffs, fmt.Sprintf("%s: %s → %s", k, va, b[k]))
		}
	}
	if len(diffs) == 0 {
		return nil
	}
	sort.Strings(diffs)
	return fmt.Errorf("the configuration differs from the run's (before → now):\n  %s", strings.Join(diffs, "\n  "))
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
