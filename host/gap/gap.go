// Package gap sets the forward passes a server actually ran during a replay (host/replay)
// against a fitted latency model of the benchmark matrix (host/latmodel): how far the matrix's
// prediction is from production-like traffic, per batch occupancy.
//
// # What is compared
//
// Each observed forward pass is a record of the server's step log (host/steplog, any preset
// with a forward time) during the replay: its time, the sequences in it (B) and its duration.
// Only decode passes enter: a record whose format says it decoded nothing, or — on the
// built-in engine's log, which says it — that also prefilled prompt tokens (a mixed step costs
// its prefill too, which the matrix model does not price). Its context lengths (prompt +
// tokens generated so far, per sequence) come from the log when it gives them (the built-in
// engine's sum_ctx and max_ctx), else they are rebuilt from the replay's records: a sequence
// is in the pass at time t when t falls between the arrivals of two of its chunks, and its
// context is its prompt plus the tokens that arrived before t.
//
// The model predicts the pass at the same (B, mean context, longest context)
// ([latmodel.Model.PredictContexts]); the relative error is (predicted − observed)/observed,
// negative when the model is too fast. Per occupancy band (B in [2^j, 2^(j+1))) the report
// gives the forwards, the median observed and predicted latency, the median relative error and
// the 90th percentile of |relative error| (nearest-rank), and how many passes lay outside the
// model's measured range (B and L̄ of the cells fitted).
//
// # What is refused or left out
//
// The model and the replay must have measured the same server ([CheckComparable]: served
// model, engine time scale, engine profile, target kind); otherwise Run refuses unless told to compare
// anyway. A pass outside the model's measured range is an extrapolation, not a test of the
// matrix: it is counted per band and left out of every figure (the command then exits 9, as
// predict and gate do), unless extrapolation is asked for, when it is compared and counted.
package gap

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/latmodel"
	"github.com/genload/genload/host/records"
	"github.com/genload/genload/host/replay"
	"github.com/genload/genload/host/report"
	"github.com/genload/genload/host/stats"
	"github.com/genload/genload/host/steplog"
)

// Forward is one observed decode forward pass and the model's prediction of it.
type Forward struct {
	// Time is when the log says it ended; Src its "file:line".
	Time time.Time `json:"time"`
	Src  string    `json:"src"`
	// Batch is the sequences in it; MeanCtx and MaxCtx their mean and longest context, in
	// tokens; FromLog says whether the contexts are the log's (else rebuilt from records).
	Batch   int     `json:"batch"`
	MeanCtx float64 `json:"mean_ctx"`
	MaxCtx  float64 `json:"max_ctx"`
	FromLog bool    `json:"contexts_from_log"`
	// ObservedMs is the log's forward time; PredictedMs the model's; Rel their relative error.
	ObservedMs  float64 `json:"observed_ms"`
	PredictedMs float64 `json:"predicted_ms"`
	Rel         float64 `json:"rel_error"`
	// Outside is why the point lies beyond the model's measured range ("" within).
	Outside string `json:"outside,omitempty"`
}

// Band is one occupancy band's comparison.
type Band struct {
	// Lo and Hi bound its batch sizes, Lo ≤ B ≤ Hi.
	Lo, Hi int    `json:"-"`
	Name   string `json:"band"`
	// N forwards compared; medians of observed and predicted ms; median relative error and
	// P90 of its absolute value (NaN, null in JSON, when N = 0); Outside the band's forwards
	// beyond the model's measured range: left out of N, or, when extrapolating, in N.
	N            int     `json:"forwards"`
	ObservedMs   float64 `json:"observed_median_ms"`
	PredictedMs  float64 `json:"predicted_median_ms"`
	MedianRel    float64 `json:"median_rel_error"`
	P90AbsRel    float64 `json:"p90_abs_rel_error"`
	Outside      int     `json:"outside_range"`
	MedianAbsRel float64 `json:"median_abs_rel_error"`
}

// MarshalJSON writes the band with null for the figures of a band with no forward compared.
func (b Band) MarshalJSON() ([]byte, error) {
	type plain Band
	if b.N > 0 {
		return json.Marshal(plain(b))
	}
	return json.Marshal(struct {
		Name    string `json:"band"`
		N       int    `json:"forwards"`
		Outside int    `json:"outside_range"`
		Why     string `json:"why"`
	}{b.Name, 0, b.Outside, "no forward pass of the band compared"})
}

// Result is a gap report.
type Result struct {
	// Model and Replay name what was compared; Log the step log read and its format.
	Model, Replay, Log, Format string
	// Comparable is the comparability line ([compare.Comparability.Line]), Mixed set when the two
	// are not comparable and were compared anyway.
	Comparable string
	Mixed      bool
	// Range describes the model's measured range; Extrapolate says passes outside it were
	// compared (else left out); OutOfRange counts them.
	Range       string
	Extrapolate bool
	OutOfRange  int
	// Forwards are the decode passes priced, in time order (those outside the range too:
	// Forward.Outside says so).
	Forwards []Forward
	// Bands per occupancy, then All over every forward compared.
	Bands []Band
	All   Band
	// Left out: log records outside the replay's span, without a forward time, that decoded
	// nothing, that also prefilled, or whose contexts could not be found (no sequence of the
	// records in flight).
	Outside, NoFwd, NoDecode, Prefill, NoContext int
	// Notes say what the figures rest on.
	Notes []string
}

// Options say what to compare.
type Options struct {
	// Model is the fitted model file (genload fit -o); Replay the replay summary
	// (<id>.json of genload replay).
	Model, Replay string
	// Log is the server's step log ("" = the replay's own, the built-in engine's); Preset
	// its format (default "genload" for the built-in engine's log).
	Log, Preset string
	// ClockOffset is added to the log's times to put them on the client's clock.
	ClockOffset time.Duration
	// AllowMixed compares a model and a replay that are not comparable (a warning then);
	// Extrapolate compares the passes outside the model's measured range too (flagged).
	AllowMixed, Extrapolate bool
}

// Run reads the model and the replay, checks that they are comparable, reads the step log and
// compares them. Errors (exitcode.InvalidConfig): a file that cannot be read, a model and a
// replay that are not comparable (unless AllowMixed; the result holds the line), a log
// format without forward times, no decode forward pass in the replay's span (the spans are
// named). Passes outside the model's range are not an error of Run: see
// [Result.OutOfRangeError].
func Run(o Options) (*Result, error) {
	m, err := latmodel.ReadFile(o.Model)
	if err != nil {
		return nil, err
	}
	sum, err := readSummary(o.Replay)
	if err != nil {
		return nil, err
	}
	cmp := CheckComparable(o.Model, m, o.Replay, sum)
	r := &Result{Model: o.Model, Replay: o.Replay, Comparable: cmp.Line(), Extrapolate: o.Extrapolate,
		Range: rangeText(m.Range)}
	if !cmp.Comparable() {
		if !o.AllowMixed {
			return r, exitcode.Errorf(exitcode.InvalidConfig, "%s (--allow-mixed compares them anyway)", r.Comparable)
		}
		r.Mixed = true
	}
	dir := filepath.Dir(o.Replay)
	recs, err := records.Read(filepath.Join(dir, sum.Records))
	if err != nil {
		return nil, err
	}
	log, preset := o.Log, o.Preset
	if log == "" {
		if sum.Steps == "" {
			return nil, fmt.Errorf("%s: the replay's target was not the built-in engine (no step log of its own): give the server's step log with --log and its --preset", o.Replay)
		}
		log = filepath.Join(dir, sum.Steps)
	}
	if preset == "" {
		preset = "genload"
	}
	f, err := steplog.Preset(preset)
	if err != nil {
		return nil, err
	}
	if !f.HasFwd() {
		return nil, fmt.Errorf("step-log preset %q carries no forward-pass time: there is nothing to compare (use a preset or --regex with fwd_ms)", preset)
	}
	p := steplog.NewParser(f, steplog.Options{Location: time.UTC, Reference: recs.Header.Started})
	extra, err := readLog(p, log)
	if err != nil {
		return nil, err
	}
	r.Log, r.Format = log, preset
	r.Notes = append(r.Notes, f.Notes()...)
	priceForwards(r, m, recs, p.Records(), extra, o.ClockOffset)
	if len(r.Forwards) == 0 {
		return r, fmt.Errorf("no decode forward pass of %s falls in the replay %s (%d records outside its span, %d without a forward time, %d prefilling): check --clock-offset or the log",
			log, o.Replay, r.Outside, r.NoFwd, r.Prefill)
	}
	summarize(r)
	return r, nil
}

// rangeText describes a model's measured range: "B 1–16, L̄ 500–8000 tokens".
func rangeText(r latmodel.Range) string {
	b, l := strconv.Itoa(r.Batch[0]), strconv.FormatFloat(r.MeanLen[0], 'g', 6, 64)
	if r.Batch[1] != r.Batch[0] {
		b += "–" + strconv.Itoa(r.Batch[1])
	}
	if r.MeanLen[1] != r.MeanLen[0] {
		l += "–" + strconv.FormatFloat(r.MeanLen[1], 'g', 6, 64)
	}
	return "B " + b + ", L̄ " + l + " tokens"
}

func readSummary(path string) (*replay.Summary, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	var s replay.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if s.Schema != replay.SummarySchema {
		return nil, fmt.Errorf("%s: %s, want a replay summary, schema %q (the <id>.json genload replay writes)", path, latmodel.DescribeJSON(b), replay.SummarySchema)
	}
	return &s, nil
}

// logExtra is what the built-in engine's step line adds: prefill tokens and contexts.
type logExtra struct {
	prefill, sumCtx, maxCtx int64
	has                     bool
}

var extraRe = regexp.MustCompile(`\b(prefill_tokens|sum_ctx|max_ctx)=(\d+)`)

// readLog feeds the log to p and returns, by "file:line", the engine fields of its lines.
func readLog(p *steplog.Parser, path string) (map[string]logExtra, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("step log: %w", err)
	}
	defer fh.Close()
	extra := map[string]logExtra{}
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 1<<16), 16<<20)
	line := 0
	for sc.Scan() {
		line++
		s := sc.Text()
		src := fmt.Sprintf("%s:%d", path, line)
		p.Line(src, s)
		var e logExtra
		n := 0
		for _, m := range extraRe.FindAllStringSubmatch(s, -1) {
			v, _ := strconv.ParseInt(m[2], 10, 64)
			switch m[1] {
			case "prefill_tokens":
				e.prefill = v
			case "sum_ctx":
				e.sumCtx, n = v, n+1
			case "max_ctx":
				e.maxCtx, n = v, n+1
			}
		}
		if e.has = n == 2; e.has || e.prefill > 0 {
			extra[src] = e
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", path, line+1, err)
	}
	if errs := p.Errors(); len(errs) > 0 {
		return nil, fmt.Errorf("step log: %d malformed lines, the first %w", len(errs), errs[0])
	}
	return extra, nil
}

// priceForwards fills r.Forwards from the log's records within the replay's span.
func priceForwards(r *Result, m *latmodel.Model, recs *records.File, steps []steplog.Record, extra map[string]logExtra, offset time.Duration) {
	t0 := recs.Header.Started
	var spanEnd float64
	for _, q := range recs.Records {
		if q.E2EMs != nil {
			spanEnd = max(spanEnd, q.SentMs+*q.E2EMs)
		}
	}
	ctx := newContexts(recs.Records)
	fromLog := 0
	for _, s := range steps {
		at := records.Ms(s.Time.Add(offset).Sub(t0))
		switch {
		case at < 0 || at > spanEnd:
			r.Outside++
			continue
		case math.IsNaN(s.FwdMs):
			r.NoFwd++
			continue
		case !s.Forward() || s.Active == 0:
			r.NoDecode++
			continue
		}
		e := extra[s.Src]
		if e.prefill > 0 {
			r.Prefill++
			continue
		}
		fw := Forward{Time: s.Time, Src: s.Src, Batch: s.Active, ObservedMs: s.FwdMs}
		if e.has && e.sumCtx > 0 {
			fw.MeanCtx, fw.MaxCtx, fw.FromLog = float64(e.sumCtx)/float64(s.Active), float64(e.maxCtx), true
			fromLog++
		} else {
			b, sum, mx := ctx.at(at)
			if b == 0 {
				r.NoContext++
				continue
			}
			fw.MeanCtx, fw.MaxCtx = sum/float64(b), mx
		}
		pred, outside, err := m.PredictContexts(fw.MeanCtx, fw.MaxCtx, fw.Batch)
		if err != nil {
			r.NoContext++
			continue
		}
		fw.PredictedMs, fw.Outside = pred, outside
		fw.Rel = (pred - fw.ObservedMs) / fw.ObservedMs
		r.Forwards = append(r.Forwards, fw)
	}
	switch {
	case fromLog == len(r.Forwards):
		r.Notes = append(r.Notes, "contexts are the log's own (sum_ctx, max_ctx of the built-in engine's steps)")
	case fromLog == 0:
		r.Notes = append(r.Notes, "contexts are rebuilt from the replay's records (prompt + tokens arrived before the step, over the sequences between two of their chunks); B is the log's")
	default:
		r.Notes = append(r.Notes, fmt.Sprintf("contexts: %d forwards from the log, %d rebuilt from the records", fromLog, len(r.Forwards)-fromLog))
	}
	r.Notes = append(r.Notes, fmt.Sprintf("the model (max_tokens %d) is evaluated at L̄ = mean context − %d, L_max = longest − %d: its kv_read and kv_tail terms then price the pass's own cached tokens", m.MaxTokens, m.MaxTokens/2, m.MaxTokens/2))
}

// contexts rebuilds, from the records, the sequences in flight at a time and their contexts.
type contexts struct {
	// spans are (from, to, context) in ms: a sequence whose chunk k−1 arrived at from and chunk
	// k at to, with prompt + k tokens of context in between; sorted by from.
	spans []span
	maxTo float64
}

type span struct{ from, to, ctx float64 }

func newContexts(rs []records.Record) *contexts {
	c := &contexts{}
	for _, r := range rs {
		got := 0.0
		for k := 1; k < len(r.Chunks); k++ {
			n := r.Chunks[k-1][1]
			if n < 1 {
				n = 1
			}
			got += n
			c.spans = append(c.spans, span{r.Chunks[k-1][0], r.Chunks[k][0], float64(r.PromptTokens) + got})
			c.maxTo = max(c.maxTo, r.Chunks[k][0]-r.Chunks[k-1][0])
		}
	}
	sort.Slice(c.spans, func(i, j int) bool { return c.spans[i].from < c.spans[j].from })
	return c
}

// at returns the sequences in flight at t (ms) with their summed and longest context.
func (c *contexts) at(t float64) (n int, sum, mx float64) {
	hi := sort.Search(len(c.spans), func(i int) bool { return c.spans[i].from >= t })
	for i := hi - 1; i >= 0 && c.spans[i].from >= t-c.maxTo; i-- {
		if s := c.spans[i]; s.to >= t {
			n++
			sum += s.ctx
			mx = max(mx, s.ctx)
		}
	}
	return n, sum, mx
}

// bandOf is the occupancy band [2^j, 2^(j+1)) holding b.
func bandOf(b int) (lo, hi int) {
	lo = 1
	for lo*2 <= b {
		lo *= 2
	}
	return lo, 2*lo - 1
}

// summarize counts the passes outside the range and bands every pass ([band] leaves those
// outside out of the figures unless extrapolating, and counts them).
func summarize(r *Result) {
	by := map[int][]Forward{}
	for _, f := range r.Forwards {
		lo, _ := bandOf(f.Batch)
		by[lo] = append(by[lo], f)
		if f.Outside != "" {
			r.OutOfRange++
		}
	}
	var los []int
	for lo := range by {
		los = append(los, lo)
	}
	slices.Sort(los)
	for _, lo := range los {
		r.Bands = append(r.Bands, band(by[lo], lo, r.Extrapolate))
	}
	r.All = band(r.Forwards, 0, r.Extrapolate)
}

// band summarises the forwards fs of the band starting at lo (0: all), leaving those outside
// the range out of the figures unless extrapolate.
func band(fs []Forward, lo int, extrapolate bool) Band {
	b := Band{Lo: lo, Name: "all"}
	if lo > 0 {
		_, hi := bandOf(lo)
		b.Hi = hi
		b.Name = strconv.Itoa(lo)
		if hi > lo {
			b.Name = fmt.Sprintf("%d–%d", lo, hi)
		}
	}
	var obs, pred, rel, abs []float64
	for _, f := range fs {
		if f.Outside != "" {
			b.Outside++
			if !extrapolate {
				continue
			}
		}
		obs, pred, rel, abs = append(obs, f.ObservedMs), append(pred, f.PredictedMs), append(rel, f.Rel), append(abs, math.Abs(f.Rel))
	}
	b.N = len(obs)
	b.ObservedMs, b.PredictedMs, b.MedianRel = stats.Median(obs), stats.Median(pred), stats.Median(rel)
	b.MedianAbsRel, b.P90AbsRel = stats.Median(abs), math.NaN()
	if len(abs) > 0 {
		slices.Sort(abs)
		b.P90AbsRel = stats.Quantile(abs, 0.9)
	}
	return b
}

// OutOfRangeError is the error the command ends with when passes outside the model's
// measured range were left out (exitcode.OutOfRange, as predict and gate; nil when none
// were, or when extrapolating).
func (r *Result) OutOfRangeError() error {
	switch {
	case r.Extrapolate || r.OutOfRange == 0:
		return nil
	case r.All.N == 0:
		return exitcode.Errorf(exitcode.OutOfRange, "all %d decode forward passes lie outside the model's measured range (%s): none compared; --extrapolate compares them, flagged",
			r.OutOfRange, r.Range)
	}
	return exitcode.Errorf(exitcode.OutOfRange, "%d of %d decode forward passes lie outside the model's measured range (%s) and were left out (counted per band); --extrapolate compares them, flagged",
		r.OutOfRange, len(r.Forwards), r.Range)
}

// WriteText writes the report: whether the model and the replay are comparable, what was
// compared and left out, a markdown table of the bands and the notes.
func (r *Result) WriteText(w io.Writer) {
	line := r.Comparable
	if r.Mixed {
		line += " (compared anyway: --allow-mixed)"
	}
	fmt.Fprintln(w, line)
	fmt.Fprintf(w, "gap: model %s against %d decode forward passes of replay %s (step log %s, preset %s)\n", r.Model, r.All.N, r.Replay, r.Log, r.Format)
	out := fmt.Sprintf("%d outside the model's measured range (%s)", r.OutOfRange, r.Range)
	if r.Extrapolate {
		out = fmt.Sprintf("none (--extrapolate: %d of the passes compared lie outside the model's measured range, %s, and are extrapolations)", r.OutOfRange, r.Range)
	}
	fmt.Fprintf(w, "left out: %d log records outside the replay, %d without a forward time, %d that decoded nothing, %d that also prefilled, %d without contexts; of the passes priced, %s\n\n",
		r.Outside, r.NoFwd, r.NoDecode, r.Prefill, r.NoContext, out)
	outCol := "left out: outside the model's range"
	if r.Extrapolate {
		outCol = "of which outside the model's range (extrapolated)"
	}
	head := []string{"B", "forwards", "observed ms (median)", "predicted ms (median)", "median rel. error", "P90 |rel. error|", outCol}
	var rows [][]string
	for _, b := range append(slices.Clone(r.Bands), r.All) {
		row := []string{b.Name, strconv.Itoa(b.N), "—", "—", "—", "—", strconv.Itoa(b.Outside)}
		if b.N > 0 {
			row[2], row[3] = fmt.Sprintf("%.3f", b.ObservedMs), fmt.Sprintf("%.3f", b.PredictedMs)
			row[4], row[5] = fmt.Sprintf("%+.1f %%", 100*b.MedianRel), fmt.Sprintf("%.1f %%", 100*b.P90AbsRel)
		}
		rows = append(rows, row)
	}
	report.MarkdownTable(w, head, rows, 0)
	fmt.Fprintln(w)
	if r.All.N == 0 {
		fmt.Fprintf(w, "no figure: every pass lies outside the model's measured range (%s); measure the matrix over the replay's B and contexts, or give --extrapolate\n", r.Range)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	fmt.Fprintf(w, "relative error = (predicted − observed) / observed: negative when the matrix model is faster than the replayed traffic ran.\n")
}

// WriteJSON writes the comparability, the bands, the totals and every forward priced.
func (r *Result) WriteJSON(w io.Writer) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	leftOut := r.OutOfRange
	if r.Extrapolate {
		leftOut = 0
	}
	return e.Encode(map[string]any{"model": r.Model, "replay": r.Replay, "log": r.Log, "preset": r.Format,
		"comparable": r.Comparable, "compared_anyway": r.Mixed, "range": r.Range, "extrapolate": r.Extrapolate,
		"bands": r.Bands, "all": r.All,
		"left_out": map[string]int{"outside": r.Outside, "no_fwd": r.NoFwd, "no_decode": r.NoDecode, "prefill": r.Prefill, "no_context": r.NoContext, "outside_model_range": leftOut},
		"notes":    r.Notes, "forwards": r.Forwards})
}
