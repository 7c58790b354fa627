package main

import (
	"context"
	"fmt"
	"os"

	"github.com/genload/genload/host/ab"
	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/internal/cliflag"
)

// abHelp is genload ab's description in its --help.
const abHelp = `Paired A/B comparison on identical prompts: two configurations (two targets, array vs
routed, two engine profiles, …) are prepared side by side; for every cell of A's matrix, A
plans the cell once (lengths, prompts, route) and both sides measure that exact plan, in pairs
of alternating order (AB, BA, AB, …), so that a slow drift of the machine falls on both sides
alike. Per pair the log ratio ln(fwd_B / fwd_A) of the mean per-forward latencies; per cell
the change B/A − 1 = exp(mean log ratio) − 1, the ratio of the two sides' geometric means,
with its two-sided Student t interval taken on the log ratios and mapped back (--confidence;
it never passes −100 %), and a verdict: B slower or B faster when the interval excludes 0,
no difference beyond ±5 % when it holds 0 and lies within ±5 %, else cannot tell (it holds
0 and a difference beyond ±5 % too). B's matrix must hold A's cells, and both sides must generate
the same max_tokens.

A pair in which one side's record has no per-forward figure (or is not status ok) is left
out with the record's reason; the cell keeps its other pairs, and a cell left with fewer than
two has no interval and no verdict ("too few pairs"). A failed request (the target failed)
stops the comparison, exit 5. Ctrl-C stops it too: the cells finished so far are printed and
written, exit 130. --json FILE writes every pair (each side's per-forward mean, d, the order,
the reason of a pair left out) and each cell's interval, rewritten after every cell.

Built-in engines: each side starts its own, and with [engine] noise each side's engine draws
its own noise (a seed derived from the configured one and the side, recorded in --json), so
that a config against itself shows the noise in its intervals instead of cancelling it.

With --max-diff PCT each cell's interval is held to ±PCT % with the gate's three outcomes:
every interval within ±PCT %: ok (exit 0); some interval wholly beyond: fail (exit 6, a
difference larger than allowed, with that confidence); else, when an interval straddles +PCT
or −PCT, or a cell has none: cannot tell (exit 8; more --pairs narrow the intervals). The
cells of each kind are named; for CI.`

func cmdAB(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("ab", "genload ab -a A.toml -b B.toml [--pairs 5] [--max-diff PCT] [--confidence 0.95] [--json FILE]",
		abHelp,
		[][2]string{
			{"a config against a copy with another engine profile", "genload ab -a bench.toml -b slower.toml"},
			{"fail CI when a cell is more than 5 % apart", "genload ab -a base.toml -b new.toml --max-diff 5"},
			{"keep every pair to check the intervals", "genload ab -a base.toml -b new.toml --json ab.json"},
		}, e)
	aPath := fs.String("a", "", "side A's bench.toml (required): the plans are A's")
	bPath := fs.String("b", "", "side B's bench.toml (required)")
	pairs := fs.Int("pairs", 5, "measured pairs per cell (≥ 2; a t interval needs two)")
	maxDiff := fs.Float64("max-diff", 0, "hold each cell's interval to ±PCT percent: exit 6 when one lies wholly beyond, 8 (cannot tell) when one straddles it or a cell has none (0 = no threshold)")
	conf := fs.Float64("confidence", 0.95, "two-sided confidence of each cell's interval, in (0, 1)")
	jsonPath := fs.String("json", "", "write every pair and each cell's interval to FILE (JSON, rewritten after each cell; a FILE that exists is not replaced without --force)")
	force := fs.Bool("force", false, "let --json replace a FILE that exists")
	if err := cliflag.Parse(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return exitcode.Errorf(exitcode.Usage, "unexpected argument %q: the configs are given with -a and -b (see 'genload ab --help')", fs.Arg(0))
	case *aPath == "" || *bPath == "":
		return exitcode.Errorf(exitcode.Usage, "-a A.toml and -b B.toml are both required (see 'genload ab --help')")
	case *pairs < 2:
		return exitcode.Errorf(exitcode.Usage, "--pairs %d: want ≥ 2 (a t interval needs two pairs)", *pairs)
	case !(*maxDiff >= 0):
		return exitcode.Errorf(exitcode.Usage, "--max-diff %g: want a percentage ≥ 0 (0 = no threshold)", *maxDiff)
	case !(*conf > 0 && *conf < 1):
		return exitcode.Errorf(exitcode.Usage, "--confidence %g: want a confidence in (0, 1), such as 0.95", *conf)
	}
	if _, err := os.Lstat(*jsonPath); *jsonPath != "" && err == nil && !*force {
		return exitcode.Errorf(exitcode.Usage, "--json %s exists (the pairs of an earlier comparison?): choose another file, remove it, or give --force to replace it (nothing measured)", *jsonPath)
	}
	paths := [2]string{*aPath, *bPath}
	var cfgs [2]*config.Config
	for i, p := range paths {
		cfg, err := loadConfig(p)
		if err != nil {
			return fmt.Errorf("side %c: %w", 'A'+i, err)
		}
		if err := cfg.Validate(); err != nil {
			return fmt.Errorf("side %c: %w", 'A'+i, err)
		}
		cfgs[i] = cfg
	}
	doc, err := ab.Run(ctx, cfgs, ab.Options{Paths: paths, Pairs: *pairs, Confidence: *conf, JSON: *jsonPath,
		Stderr: e.stderr, Version: version, Getenv: e.getenv})
	if doc == nil {
		return err
	}
	fmt.Fprintln(e.stdout, doc.Comparable)
	doc.WriteMarkdown(e.stdout)
	if doc.JSON != "" {
		fmt.Fprintf(e.stdout, "pairs: %s\n", doc.JSON)
	}
	if err != nil {
		return err
	}
	if *maxDiff > 0 {
		line, err := doc.CheckMaxDiff(*maxDiff)
		if err != nil {
			return err
		}
		fmt.Fprintln(e.stdout, line)
	}
	return nil
}
