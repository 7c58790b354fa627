package run

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/genload/genload/host/internal/testplugins"
	"github.com/genload/genload/host/results"
)

// A cell of more prompts than the corpus has rows runs: B = 300 against the embedded 256 rows,
// with 300 distinct prompts of the cell's lengths (the 44 beyond the rows are rotations of
// them, host/prompt) that the server counts exactly.
func TestBatchAboveTheCorpusRuns(t *testing.T) {
	t.Setenv(testplugins.EnvPluginDir, testplugins.Dir(t))
	cfg := probeCfg(t, fmt.Sprintf("max_tokens = 4\nmetrics = \"off\"\nout = %q\n[engine]\ntime_scale = 0.002\n[matrix]\nseq_lens = [200]\nbatch_sizes = [300]\n", t.TempDir()))
	var stderr bytes.Buffer
	res, err := Run(context.Background(), cfg, Options{Stderr: &stderr, RunID: "big"})
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	c := res.Run.Cells[0]
	if c.Status == results.StatusError || c.Figures == nil {
		t.Fatalf("cell %+v", c)
	}
	if len(c.Lengths.Each) != 300 {
		t.Fatalf("lengths %+v", c.Lengths)
	}
	if p := c.Figures.Prompts; p == nil || p.Requests == 0 || p.Deviating != 0 {
		t.Errorf("prompt-token deviation %+v, want every prompt counted as built", p)
	}
}
