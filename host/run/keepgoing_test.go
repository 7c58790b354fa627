package run

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/internal/testplugins"
	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/tokenizer"
)

// Against the built-in engine answering every second completion request with 503: with the
// warmup off, no retries and no token-count probe, the four cells send one request each, so
// cells 2 and 4 fail. on_error = "stop" ends the run at cell 2; "continue" measures all four,
// records the two failures, and still exits non-zero.
func TestOnErrorAgainstTheEngine(t *testing.T) {
	t.Setenv(testplugins.EnvPluginDir, testplugins.Dir(t))
	tok, err := tokenizer.Default()
	if err != nil {
		t.Fatal(err)
	}
	for _, onError := range []string{"stop", "continue"} {
		t.Run(onError, func(t *testing.T) {
			url := failingEngine(t, tok, 0.05)
			cfg := probeCfg(t, fmt.Sprintf("target = %q\nmax_tokens = 6\nmetrics = \"off\"\ntoken_counts = \"usage\"\nout = %q\n"+
				"[run]\non_error = %q\n[warmup]\ndisabled = true\nretries = 0\n[matrix]\nseq_lens = [300, 600]\nbatch_sizes = [1, 2]\n",
				url, t.TempDir(), onError))
			var stderr bytes.Buffer
			res, err := Run(context.Background(), cfg, Options{Stderr: &stderr, RunID: "keepgoing"})
			if exitcode.Of(err) != exitcode.TargetFailed || res == nil {
				t.Fatalf("err %v (code %v)\n%s", err, exitcode.Of(err), stderr.String())
			}
			var got []string
			for _, c := range res.Run.Cells {
				got = append(got, c.Cell.Key()+" "+c.Status)
				if c.Status == results.StatusError && !strings.Contains(c.Error, "status 503") {
					t.Errorf("%s: error %q", c.Cell.Key(), c.Error)
				}
			}
			want := []string{"L=300,B=1 ok", "L=300,B=2 error"}
			if onError == "continue" {
				want = append(want, "L=600,B=1 ok", "L=600,B=2 error")
				if !strings.HasPrefix(err.Error(), "2 of 4 cells failed") {
					t.Errorf("err %v", err)
				}
			}
			if f := res.Run.Footer; !slices.Equal(got, want) || res.Measured != len(want)/2 || f == nil || f.Status != results.StatusError || f.Failed != len(want)/2 {
				t.Fatalf("cells %v (measured %d, footer %+v), want %v", got, res.Measured, f, want)
			}
			if onError == "stop" {
				return
			}
			// --resume, now with on_error = "stop" (what a failed cell does is not what the run
			// measures): only the two failed cells are sent again, as requests 5 (ok) and 6 (503).
			cfg.Run.OnError = "stop"
			res, err = Run(context.Background(), cfg, Options{Stderr: &stderr, RunID: "keepgoing", Resume: res.JSONL})
			if exitcode.Of(err) != exitcode.TargetFailed || res == nil {
				t.Fatalf("resume: err %v (code %v)\n%s", err, exitcode.Of(err), stderr.String())
			}
			// the run read back keeps each cell's last record
			if got := statuses(res.Run.Cells); !slices.Equal(got, []string{"L=300,B=1 ok", "L=300,B=2 ok", "L=600,B=1 ok", "L=600,B=2 error"}) ||
				!strings.Contains(stderr.String(), "resuming ") || strings.Count(stderr.String(), "] 1 cell measured before, skipped") != 2 {
				t.Fatalf("resumed cells %v\n%s", got, stderr.String())
			}
		})
	}
}
