package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/gap"
	"github.com/genload/genload/host/internal/cliflag"
)

func cmdGap(_ context.Context, args []string, e *env) error {
	fs := newFlagSet("gap", "genload gap MODEL.json REPLAY.json [--log STEPS --preset P] [--extrapolate] [-o PREFIX] [--json FILE]",
		`Set the forward passes a server ran during a replay against a fitted latency model of the
matrix: each decode pass of the server's step log (the built-in engine's own, written by
genload replay, or --log with a 'genload steplog' preset) with its batch occupancy B and its
context lengths (the log's, or rebuilt from the replay's records), against the model's
prediction at the same (B, L̄, L_max). The first line says whether the model and the replay
measured the same server (served model, target, engine profile by name and hash, time scale);
if not, gap refuses (exit 3) unless --allow-mixed. Prints, per occupancy band, the median
relative error and the 90th percentile of its absolute value; -o draws observed against
predicted (PNG, SVG). Passes outside the model's measured range (B, L̄) are counted per band
and left out of the figures, and gap exits 9 after printing the others; --extrapolate
compares them too, flagged. What the comparison assumes: RATIONALE.md.`,
		[][2]string{
			{"a replay on the built-in engine against the model of a ragged matrix", "genload gap results/model.json results/replay-20261201-100000.json -o results/gap"},
			{"a vLLM-like server whose log has an active=N … fwd=Xms line per step", "genload gap model.json replay.json --log server.log --preset active-fwd"},
		}, e)
	log := fs.String("log", "", "the server's step log (default: the replay's built-in engine log)")
	preset := fs.String("preset", "", "the log's format: a 'genload steplog' preset (default genload)")
	offset := fs.Duration("clock-offset", 0, "added to the log's times to put them on the client's clock")
	out := fs.String("o", "", "write the observed-against-predicted plot to PREFIX.png and PREFIX.svg")
	js := fs.String("json", "", "write the bands and every forward pass compared to this JSON file")
	mixed := fs.Bool("allow-mixed", false, "compare a model and a replay that are not comparable (another time scale, profile, model or target)")
	extrapolate := fs.Bool("extrapolate", false, "compare the passes outside the model's measured range too (flagged) instead of leaving them out")
	if err := cliflag.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return exitcode.Errorf(exitcode.Usage, "want MODEL.json and REPLAY.json (see 'genload gap --help')")
	}
	r, err := gap.Run(gap.Options{Model: fs.Arg(0), Replay: fs.Arg(1), Log: *log, Preset: *preset, ClockOffset: *offset,
		AllowMixed: *mixed, Extrapolate: *extrapolate})
	if err != nil {
		return exitcode.With(exitcode.InvalidConfig, err)
	}
	r.WriteText(e.stdout)
	if *out != "" {
		ch, err := r.Plot()
		if err == nil {
			var png, svg string
			if png, svg, err = ch.Save(strings.TrimSuffix(*out, ".png")); err == nil {
				fmt.Fprintf(e.stdout, "plot: %s, %s\n", png, svg)
			}
		}
		if err != nil {
			return err
		}
	}
	if *js != "" {
		f, err := os.Create(*js)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := r.WriteJSON(f); err != nil {
			return err
		}
	}
	return r.OutOfRangeError()
}
