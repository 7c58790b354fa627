package main

import (
	"context"
	"os"
	"time"

	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/internal/cliflag"
	"github.com/genload/genload/host/lengthfit"
	"github.com/genload/genload/host/trace"
)

func cmdLengthsFit(_ context.Context, args []string, e *env) error {
	fs := newFlagSet("lengths fit", "genload lengths fit TRACE… [--input NAME] [--output NAME] [--group NAME] [-o lengths.toml]",
		`Fit the prompt (and output) lengths of request logs by maximum likelihood: gamma (shape k
with its 95 % profile-likelihood interval), lognormal, Weibull, and the empirical quantile
table; each fit's Kolmogorov–Smirnov distance and AIC, the best fit, and the [lengths]
settings for bench.toml. A log is JSON Lines (one object per request) or CSV (a header row);
field names default to the Mooncake trace format's (timestamp, input_length, output_length,
hash_ids); a records file of genload replay or run --records is read by its header
(prompt_tokens, max_tokens). With --group, one fit per value of that field too. -o writes the
quantile table of the prompt lengths as the [lengths] table of the SDK's empirical plugin,
one file per group beside it (never replacing a file without --force); 'genload lengths -c
FILE' previews it.`,
		[][2]string{
			{"a Mooncake-format trace", "genload lengths fit conversation_trace.jsonl"},
			{"a CSV log per deployment, with its table", "genload lengths fit --input prompt_tokens --output completion_tokens --group deployment -o lengths.toml requests.csv"},
		}, e)
	in := fs.String("input", "", "field (JSON Lines) or column (CSV) of the prompt length in tokens (default input_length)")
	out := fs.String("output", "", "field of the output length in tokens (default output_length; - for none)")
	group := fs.String("group", "", "field whose values group the requests (e.g. deployment, model): one fit per group")
	format := fs.String("format", "", "jsonl or csv (default: by the file's extension, else sniffed)")
	bins := fs.Int("bins", 32, "bins of the quantile table")
	table := fs.String("o", "", "write the prompt lengths' quantile table (the empirical plugin's [lengths] table) to this file, and one per group beside it")
	force := fs.Bool("force", false, "let -o replace table files that exist")
	// run and replay take --out; here the file is -o, and --output, the nearest name, is the
	// output-length field
	cliflag.Meant(fs, "out", "the quantile table is written with -o FILE (--output names the log's output-length field)")
	if err := cliflag.Parse(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() == 0:
		return exitcode.Errorf(exitcode.Usage, "want at least one request log (see 'genload lengths fit --help')")
	case *bins < 1 || *bins > 10000:
		return exitcode.Errorf(exitcode.Usage, "--bins %d: want 1 … 10000", *bins)
	case *format != "" && *format != trace.FormatJSONL && *format != trace.FormatCSV:
		return exitcode.Errorf(exitcode.Usage, "--format %q: want jsonl or csv", *format)
	}
	c := lengthfit.Command{Paths: fs.Args(), Format: *format, Bins: *bins, Table: *table, Force: *force,
		Fields: trace.Fields{Input: *in, Output: *out, Group: *group, TimeUnit: time.Millisecond}}
	_, err := c.Run(e.stdout, func(p string, b []byte) error {
		flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL // never a file replaced without --force
		if *force {
			flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
		}
		f, err := os.OpenFile(p, flags, 0o644)
		if err != nil {
			return err
		}
		if _, err := f.Write(b); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	})
	return exitcode.With(exitcode.InvalidConfig, err)
}
