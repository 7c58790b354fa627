package main

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/plugin"
)

func cmdLengths(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("lengths", "genload lengths --plugin NAME|FILE.wasm --mean L --batch B [--set key=value]…",
		`Print the prompt lengths (tokens) a length plugin gives for one cell of target mean L and batch
size B, their mean, p50, p90 and max, and a small text histogram, so a plugin author sees the
shape before a run. Lengths are clamped to [--min, --max] as a run clamps them.`,
		[][2]string{
			{"the default gamma (k = 0.9) for L = 4000, B = 64", "genload lengths --plugin gamma --mean 4000 --batch 64"},
			{"a flatter gamma", "genload lengths --plugin gamma --mean 4000 --batch 64 --set k=4"},
			{"your own plugin", "genload lengths --plugin ./build/plugins/empirical.wasm --mean 2000 --batch 32 --set 'edges=[0,1000,4000]' --set 'counts=[3,1]'"},
		}, e)
	name := fs.String("plugin", "gamma", "length plugin name or .wasm path")
	mean := fs.Int("mean", 4000, "target mean length L in tokens")
	batch := fs.Int("batch", 64, "batch size B (number of lengths)")
	lo := fs.Int("min", 1, "smallest length in tokens")
	hi := fs.Int("max", math.MaxInt32, "largest length in tokens")
	seed := fs.Uint64("seed", 42, "run seed")
	sets := kvList{}
	fs.Var(&sets, "set", "plugin config key=value (value parsed as JSON when it can be, else a string); repeatable")
	if err := parse(fs, args); err != nil {
		return err
	}
	host, err := plugin.NewHost(ctx, plugin.Options{Seed: *seed})
	if err != nil {
		return exitcode.With(exitcode.PluginRejected, err)
	}
	defer host.Close(context.Background())
	cfg := map[string]any(sets)
	if len(cfg) == 0 && *name == "gamma" {
		cfg = map[string]any{"k": 0.9}
	}
	p, err := host.LoadLengths(ctx, *name, cfg)
	if err != nil {
		return exitcode.With(exitcode.PluginRejected, err)
	}
	ls, err := p.Lengths(ctx, *batch, *mean, *lo, *hi)
	if err != nil {
		return exitcode.With(exitcode.PluginRejected, err)
	}
	info := p.Info()
	fmt.Fprintf(e.stdout, "plugin %s %s (%s), L = %d, B = %d\n", info.Name, info.Version, info.Path, *mean, *batch)
	fmt.Fprintf(e.stdout, "lengths: %s\n", joinInts(ls))
	fmt.Fprint(e.stdout, describeLengths(ls, *mean))
	return nil
}

// describeLengths prints mean (and its deviation from target), p50, p90, min, max and a
// 10-bin text histogram of lengths.
func describeLengths(ls []int, target int) string {
	if len(ls) == 0 {
		return "no lengths\n"
	}
	s := append([]int(nil), ls...)
	sort.Ints(s)
	sum := 0
	for _, x := range s {
		sum += x
	}
	mean := float64(sum) / float64(len(s))
	q := func(p float64) int { return s[min(len(s)-1, int(math.Ceil(p*float64(len(s))))-1)] } // nearest rank
	var b strings.Builder
	fmt.Fprintf(&b, "mean %.1f (%+.2f %% of %d)  p50 %d  p90 %d  min %d  max %d\n", mean, 100*(mean-float64(target))/float64(target), target, q(0.5), q(0.9), s[0], s[len(s)-1])
	const bins, width = 10, 40
	lo, hi := s[0], s[len(s)-1]
	step := max(1, (hi-lo+bins)/bins)
	counts := make([]int, bins)
	for _, x := range s {
		counts[min(bins-1, (x-lo)/step)]++
	}
	top := 0
	for _, c := range counts {
		top = max(top, c)
	}
	for i, c := range counts {
		from := lo + i*step
		fmt.Fprintf(&b, "%8d–%-8d %-*s %d\n", from, from+step-1, width, strings.Repeat("█", (c*width+top-1)/top), c)
	}
	return b.String()
}

func joinInts(v []int) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = strconv.Itoa(x)
	}
	return strings.Join(parts, " ")
}
