package gap

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/internal/textcheck"
	"github.com/genload/genload/host/latmodel"
	"github.com/genload/genload/host/records"
	"github.com/genload/genload/host/replay"
)

// builtin is the engine description a model or a replay on the built-in engine carries.
func builtin(hash string, timeScale float64) map[string]any {
	e := map[string]any{"profile": "moe-30b-a3b", "time_scale": timeScale}
	if hash != "" {
		e["profile_hash"] = hash
	}
	return e
}

func onEngine(e map[string]any) func(*latmodel.Model) {
	return func(m *latmodel.Model) { m.Model, m.Engine = "genload-sim", e }
}

func replayOn(e map[string]any) replay.Summary {
	s := replay.Summary{Header: records.Header{Model: "genload-sim"}}
	if e != nil {
		s.Header.Extra = map[string]any{"engine": e}
		s.TimeScale, _ = e["time_scale"].(float64)
	}
	return s
}

// A model fitted at one time scale is refused against a replay at another, and so is one of
// another profile, another profile hash or another target; the first line of the report
// says which, in the comparability line every comparing command prints
// (compare.Comparability.Line), and --allow-mixed compares them anyway, saying so.
func TestGapChecksTheModelAndTheReplayMeasuredOneServer(t *testing.T) {
	for _, c := range []struct {
		name     string
		model    func(*latmodel.Model)
		sum      replay.Summary
		line     string
		mismatch bool
	}{
		{"same", onEngine(builtin("sha256:aa", 0.05)), replayOn(builtin("sha256:aa", 0.05)),
			`comparable: model M and replay R of model "genload-sim", engine time scale 0.05, engine profile moe-30b-a3b (sha256:aa)`, false},
		{"time scale", onEngine(builtin("sha256:aa", 0.2)), replayOn(builtin("sha256:aa", 0.05)),
			`NOT comparable: different engine time scale: model M 0.2 / replay R 0.05; same model "genload-sim", engine profile moe-30b-a3b (sha256:aa)`, true},
		{"the replay's own time scale", onEngine(builtin("sha256:aa", 0.05)), func() replay.Summary {
			s := replayOn(builtin("sha256:aa", 0.2)) // the engine description's scale, overridden by the replay's run
			s.TimeScale = 0.05
			return s
		}(), `comparable: model M and replay R of model "genload-sim", engine time scale 0.05, engine profile moe-30b-a3b (sha256:aa)`, false},
		{"no hash in the replay", onEngine(builtin("sha256:aa", 0.05)), replayOn(builtin("", 0.05)),
			`comparable: model M and replay R of model "genload-sim", engine time scale 0.05, engine profile moe-30b-a3b (hash not recorded)`, false},
		{"hash", onEngine(builtin("sha256:aa", 0.05)), replayOn(builtin("sha256:bb", 0.05)),
			`NOT comparable: different engine profile: model M moe-30b-a3b (sha256:aa) / replay R moe-30b-a3b (sha256:bb); same model "genload-sim", engine time scale 0.05`, true},
		{"target", func(m *latmodel.Model) { m.Model = "genload-sim" }, replayOn(builtin("sha256:aa", 0.05)),
			`NOT comparable: different target kind: model M external server / replay R built-in engine; same model "genload-sim"`, true},
		{"served model", func(m *latmodel.Model) { m.Model = "qwen3" }, replayOn(nil),
			`NOT comparable: different model: model M "qwen3" / replay R "genload-sim"`, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			model := writeModel(t, dir, 1, 0.1, 1e-4, 1e-5, 100, c.model)
			_, rp := writeReplay(t, dir, c.sum)
			line := strings.NewReplacer("model M", "model "+model, "replay R", "replay "+rp).Replace(c.line)
			r, err := Run(Options{Model: model, Replay: rp})
			if c.mismatch {
				if exitcode.Of(err) != exitcode.InvalidConfig || err.Error() != line+" (--allow-mixed compares them anyway)" {
					t.Fatalf("exit %d, %v\nwant %s", exitcode.Of(err), err, line)
				}
				if r, err = Run(Options{Model: model, Replay: rp, AllowMixed: true}); err != nil || !r.Mixed {
					t.Fatalf("--allow-mixed: %v", err)
				}
				line += " (compared anyway: --allow-mixed)"
			} else if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			r.WriteText(&b)
			if first, _, _ := strings.Cut(b.String(), "\n"); first != line {
				t.Errorf("first line %q\n      want %q", first, line)
			}
		})
	}
}

// row returns the cells of the table row whose first cell is name.
func row(text, name string) []string {
	for _, l := range strings.Split(text, "\n") {
		cells := strings.Split(strings.Trim(l, "|"), "|")
		if len(cells) > 1 && strings.TrimSpace(cells[0]) == name {
			for i := range cells {
				cells[i] = strings.TrimSpace(cells[i])
			}
			return cells
		}
	}
	return nil
}

// Passes outside the model's measured range are counted per band and left out of its
// figures, and the command's error is exit 9 as predict's and gate's; --extrapolate compares
// them, and a model that covers none of the passes gives no figure at all. The report is a
// well-formed markdown table (the P90 |rel. error| header escaped).
func TestGapLeavesOutPassesOutsideTheModelsRange(t *testing.T) {
	dir := t.TempDir()
	model := writeModel(t, dir, 1, 0.1, 1e-4, 1e-5, 100, func(m *latmodel.Model) { m.Range.Batch = [2]int{1, 1} })
	_, rp := writeReplay(t, dir, replay.Summary{})
	r, err := Run(Options{Model: model, Replay: rp})
	if err != nil {
		t.Fatal(err)
	}
	if r.OutOfRange != 3 || r.All.N != 2 || r.All.Outside != 3 || len(r.Bands) != 2 || r.Bands[0].N != 2 || r.Bands[0].Outside != 0 || r.Bands[1].N != 0 || r.Bands[1].Outside != 3 {
		t.Fatalf("out of range %d, all %+v, bands %+v", r.OutOfRange, r.All, r.Bands)
	}
	// The headline is B = 1's alone: errors +15.511 % and −7.58 % (TestGapPricesEachLoggedStep),
	// whose median is their midpoint.
	if want := (1.1 + 1.1e-4*501 - 1 + (1.1+1.1e-4*502-1.25)/1.25) / 2; math.Abs(r.All.MedianRel-want) > 1e-12 {
		t.Errorf("median %v, want %v (the B = 1 passes only)", r.All.MedianRel, want)
	}
	err = r.OutOfRangeError()
	if exitcode.Of(err) != exitcode.OutOfRange || err.Error() != "3 of 5 decode forward passes lie outside the model's measured range (B 1, L̄ 100–20000 tokens) and were left out (counted per band); --extrapolate compares them, flagged" {
		t.Errorf("exit %d: %v", exitcode.Of(err), err)
	}
	var b strings.Builder
	r.WriteText(&b)
	text := b.String()
	if n, err := textcheck.MarkdownTables(text); n != 1 || err != nil {
		t.Errorf("%d tables, %v:\n%s", n, err, text)
	}
	if got := strings.Join(row(text, "2–3"), ","); got != "2–3,0,—,—,—,—,3" {
		t.Errorf("band 2–3: %s\n%s", got, text)
	}
	if !strings.Contains(text, `P90 \|rel. error\|`) || !strings.Contains(text, "left out: outside the model's range |") || !strings.Contains(text, "of the passes priced, 3 outside the model's measured range (B 1, L̄ 100–20000 tokens)") {
		t.Errorf("report:\n%s", text)
	}
	// --extrapolate: every pass compared, the three counted, exit 0.
	r, err = Run(Options{Model: model, Replay: rp, Extrapolate: true})
	if err != nil || r.All.N != 5 || r.All.Outside != 3 || r.OutOfRangeError() != nil {
		t.Fatalf("--extrapolate: %v, all %+v, %v", err, r.All, r.OutOfRangeError())
	}
	b.Reset()
	r.WriteText(&b)
	if !strings.Contains(b.String(), "of which outside the model's range (extrapolated) |") {
		t.Errorf("--extrapolate report:\n%s", b.String())
	}
	// No pass within the range: no figure, its reason, a JSON file that says so.
	model = writeModel(t, dir, 1, 0.1, 1e-4, 1e-5, 100, func(m *latmodel.Model) { m.Range.Batch = [2]int{4, 8} })
	r, err = Run(Options{Model: model, Replay: rp})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.OutOfRangeError(); exitcode.Of(err) != exitcode.OutOfRange || !strings.HasPrefix(err.Error(), "all 5 decode forward passes lie outside the model's measured range (B 4–8, L̄ 100–20000 tokens): none compared") {
		t.Errorf("none in range: %v", err)
	}
	b.Reset()
	r.WriteText(&b)
	if got := strings.Join(row(b.String(), "all"), ","); got != "all,0,—,—,—,—,5" || !strings.Contains(b.String(), "no figure: every pass lies outside") {
		t.Errorf("none in range: %s\n%s", got, b.String())
	}
	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back struct {
		All map[string]any `json:"all"`
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.All["why"] != "no forward pass of the band compared" || back.All["observed_median_ms"] != nil {
		t.Errorf("JSON all: %v %v", err, back.All)
	}
	if _, err := r.Plot(); err != nil {
		t.Errorf("plot of passes none compared: %v", err)
	}
}

// Every occupancy band has its own colour: the palette has twelve distinct ones (B up to
// 4095), and more bands get as many distinct colours; the SVG plot of nine bands holds nine
// band colours besides the grey of the points left out.
func TestBandsHaveDistinctColours(t *testing.T) {
	for n := 1; n <= 16; n++ {
		cs := bandColours(n)
		seen := map[[4]uint32]bool{}
		for _, c := range cs {
			r, g, b, a := c.RGBA()
			seen[[4]uint32{r, g, b, a}] = true
		}
		if len(cs) != n || len(seen) != n {
			t.Errorf("%d bands: %d colours, %d distinct", n, len(cs), len(seen))
		}
	}
	r := &Result{Model: "m"}
	for j := range 9 {
		b := 1 << j
		r.Forwards = append(r.Forwards, Forward{Batch: b, ObservedMs: float64(j + 1), PredictedMs: float64(j + 1)})
	}
	r.Forwards = append(r.Forwards, Forward{Batch: 3, ObservedMs: 2, PredictedMs: 3, Outside: "batch size 3 not in the measured [1, 1]"})
	summarize(r)
	ch, err := r.Plot()
	if err != nil {
		t.Fatal(err)
	}
	_, svg, err := ch.Save(filepath.Join(t.TempDir(), "p"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := os.ReadFile(svg)
	fills := map[string]bool{}
	for _, m := range regexp.MustCompile(`fill:(#[0-9A-Fa-f]{6})`).FindAllStringSubmatch(string(body), -1) {
		fills[strings.ToLower(m[1])] = true
	}
	want := map[string]bool{fmt.Sprintf("#%02x%02x%02x", 200, 200, 200): true}
	for _, c := range bandColours(9) {
		n := color.NRGBAModel.Convert(c).(color.NRGBA)
		want[fmt.Sprintf("#%02x%02x%02x", n.R, n.G, n.B)] = true
	}
	for c := range want {
		if !fills[c] {
			t.Errorf("colour %s not in the plot (fills %v)", c, fills)
		}
	}
}
