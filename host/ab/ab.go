// Package ab is the paired A/B comparison of two configurations on identical prompts (genload
// ab): side A plans each cell of its matrix once (lengths, prompts, route), both sides measure
// that exact plan in pairs of alternating order (AB, BA, AB, …), and per cell the mean of the
// pairs' relative differences d = fwd_B / fwd_A − 1 gets a two-sided Student t interval and a
// verdict (B slower, B faster, no difference beyond ±5 %, or cannot tell).
//
// Files: ab.go (Run: the sides and the loop over the cells), pair.go (one cell's pairs and
// its interval), doc.go (the document --json writes, the table, the --max-diff check).
package ab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/genload/genload/host/compare"
	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/run"
)

// Options are the comparison's settings.
type Options struct {
	// Paths name the two configurations (A, B) in messages and in the document.
	Paths [2]string
	// Pairs is the number of measured pairs per cell (≥ 2: a t interval needs two).
	Pairs int
	// Confidence is the two-sided confidence of each cell's interval, in (0, 1).
	Confidence float64
	// JSON, when set, is the file the document is written to after every cell and at the end
	// (through a temporary file, so that a reader never sees half a file).
	JSON string
	// Stderr receives one line per finished cell; nil discards them.
	Stderr io.Writer
	// Version and Getenv are passed to each side's run.Prepare.
	Version string
	Getenv  func(string) string
}

// Run compares the validated configurations cfgs (A, B) cell by cell over A's matrix. Before
// anything is measured it refuses, with exitcode.InvalidConfig, configurations whose
// max_tokens differ (B measures A's plans with its own settings: sequences of another length
// are not the same forward passes), whose planning settings differ (samePlanning: B's would
// not be measured) and a B whose matrix lacks one of A's cells; then it
// prepares both sides (each its own built-in engine when the target is builtin, its noise
// seed derived from the configured one and "ab side A" / "ab side B", so that a config against
// itself shows the noise instead of cancelling it).
//
// The document is nil when the comparison did not start (the error says why: a side's setup,
// the checks above); otherwise it holds every finished cell and how the comparison ended
// (Status), also when the error is not nil: a failed measurement (the target failed), an
// interrupt (exit code Interrupted: the cells so far are kept) or a failed write of
// Options.JSON, which stops the comparison. Doc.JSON is the file written, "" when none was;
// Doc.Comparable says what differs between the sides besides what is compared (the served
// model, labels, engine profile: compare.CheckComparable), for the caller to print first.
func Run(ctx context.Context, cfgs [2]*config.Config, opt Options) (*Doc, error) {
	if opt.Stderr == nil {
		opt.Stderr = io.Discard
	}
	if a, b := cfgs[0].MaxTokens, cfgs[1].MaxTokens; a != b {
		return nil, exitcode.Errorf(exitcode.InvalidConfig, "max_tokens differs: %d in A (%s), %d in B (%s); the sides must generate the same tokens per sequence",
			a, opt.Paths[0], b, opt.Paths[1])
	}
	if err := samePlanning(cfgs, opt.Paths); err != nil {
		return nil, err
	}
	var sessions [2]*run.Session
	for i, cfg := range cfgs {
		s, err := run.Prepare(ctx, cfg, run.Options{Stderr: opt.Stderr, Version: opt.Version, Getenv: opt.Getenv,
			EngineStart: fmt.Sprintf("ab side %c", 'A'+i)}) // the sides' built-in engines draw independent noise
		if err != nil {
			return nil, fmt.Errorf("side %c (%s): %w", 'A'+i, opt.Paths[i], err)
		}
		defer s.Close()
		sessions[i] = s
	}
	inB := map[[2]int]bool{}
	for _, c := range sessions[1].Cells() {
		inB[[2]int{c.SeqLen, c.Batch}] = true
	}
	cells := sessions[0].Cells()
	for _, c := range cells {
		if !inB[[2]int{c.SeqLen, c.Batch}] {
			return nil, exitcode.Errorf(exitcode.InvalidConfig, "cell %s of A's matrix is not in B's (%s): compare the same matrix", c.Key(), opt.Paths[1])
		}
	}
	doc := &Doc{A: opt.Paths[0], B: opt.Paths[1], Pairs: opt.Pairs, Confidence: opt.Confidence,
		Engines: [2]map[string]any{sessions[0].Header().Engine, sessions[1].Header().Engine}, Cells: []Cell{}, of: len(cells)}
	// Two configurations compared on one plan: the served model, labels and engine profile
	// may be what differs; max_tokens may not (checked above).
	ids := []compare.Identity{compare.IdentityOf("A "+opt.Paths[0], sessions[0].Header()), compare.IdentityOf("B "+opt.Paths[1], sessions[1].Header())}
	doc.Comparable = compare.CheckComparable(ids).Line(append([]string{compare.FieldModel, compare.FieldLabels}, compare.AcrossDeployments...)...)
	sides := []side{sessions[0], sessions[1]}
	var runErr error
	for _, c := range cells {
		row, err := measureCell(ctx, sides, c, opt.Pairs, opt.Confidence)
		if err != nil {
			runErr = err
			break
		}
		if row.N >= 2 {
			fmt.Fprintf(opt.Stderr, "%s: B/A − 1 = %+.2f %% [%+.2f, %+.2f] %s\n", c.Key(), 100*row.Mean, 100*row.Lo, 100*row.Hi, row.Verdict)
		} else {
			fmt.Fprintf(opt.Stderr, "%s: %s\n", c.Key(), row.Verdict)
		}
		doc.Cells = append(doc.Cells, row)
		if opt.JSON != "" {
			if err := doc.WriteJSON(opt.JSON); err != nil {
				runErr = err
				break
			}
		}
	}
	switch {
	case runErr == nil:
		doc.Status = "ok"
	case exitcode.Of(runErr) == exitcode.Interrupted:
		doc.Status, doc.Error = "interrupted", runErr.Error()
	default:
		doc.Status, doc.Error = "error", runErr.Error()
	}
	if opt.JSON != "" {
		if err := doc.WriteJSON(opt.JSON); err != nil {
			return doc, errors.Join(runErr, err)
		}
		doc.JSON = opt.JSON
	}
	return doc, runErr
}

// samePlanning refuses, with exitcode.InvalidConfig, two configurations that plan their
// cells differently: A plans every cell (its lengths, prompts, request shape and route, from
// its seed) and both sides measure that plan, so a B whose [lengths], [prompt], [router],
// mode or seed differ would be compared on settings it does not have — a confident "no
// difference" for a difference never measured. It names each differing setting with both
// values (as TOML would write them, in JSON).
func samePlanning(cfgs [2]*config.Config, paths [2]string) error {
	a, b := cfgs[0], cfgs[1]
	var diff []string
	for _, f := range []struct {
		key  string
		a, b any
	}{{"seed", a.Seed, b.Seed}, {"mode", a.Mode, b.Mode}, {"[lengths]", a.Lengths, b.Lengths}, {"[prompt]", a.Prompt, b.Prompt}, {"[router]", a.Router, b.Router}} {
		ja, _ := json.Marshal(f.a)
		jb, _ := json.Marshal(f.b)
		if !bytes.Equal(ja, jb) {
			diff = append(diff, fmt.Sprintf("%s: %s in A, %s in B", f.key, ja, jb))
		}
	}
	if len(diff) == 0 {
		return nil
	}
	return exitcode.Errorf(exitcode.InvalidConfig, "the sides plan their cells differently (%s); genload ab measures both on A's plan (lengths, prompts, request shape, route), so B's would not be measured: compare what serves the plan (target, engine, server settings) here, and planning settings by running each and comparing the runs (genload diff, or genload report RUN_A RUN_B) (A %s, B %s)",
		strings.Join(diff, "; "), paths[0], paths[1])
}
