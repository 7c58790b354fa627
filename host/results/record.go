// Package results holds genload's results records and their files: the run's header, one
// record per cell and repeat, the footer ([Header], [Cell], [Footer], [Run]); the JSONL file a
// [Writer] appends (and fsyncs) one record at a time and [Resume] continues; the final JSON
// document ([WriteJSON]); and reading either back ([ReadFile], [ReadRuns]). What prints a run
// (tables, CSV, warnings) is package report; what compares runs is package compare.
//
// # Results schema (genload.run/v1)
//
// results/<run-id>.jsonl holds one JSON object per line, each with a "type":
//
//	{"type":"header", …Header}   first line: config, tokenizer, plugins, target, context
//	{"type":"cell",   …Cell}     one per finished (or failed, or interrupted) cell, in run order
//	{"type":"footer", …Footer}   last line, only when the run ended
//
// results/<run-id>.json is {"header": Header, "cells": [Cell…], "footer": Footer} and
// results/<run-id>.csv has one row per cell (columns in report.CSVHeader, written by
// report.Finish beside the JSON file). Durations are in milliseconds (float64) in JSON and
// CSV; lengths in tokens.
//
// # Warnings
//
// A cell's "warnings" are texts; its "warning_names" give each its kind's stable name from
// the catalogue of package warning ("late-first-chunks", "batch-not-reached", …), in the
// same order. Group, filter and write a CSV column by name, never by text: [Cell.NamedWarnings]
// returns the (name, text) pairs — naming from the catalogue the texts of a file written
// before names existed, which load unchanged — and report.GroupWarnings heads each group with
// its kind's sentence (warning.Kind.Headline). Add warnings with [Cell.Warn].
package results

import (
	"strconv"
	"time"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/measure"
	"github.com/genload/genload/host/recording"
	"github.com/genload/genload/host/scrape/metrics"
	"github.com/genload/genload/host/steplog"
	"github.com/genload/genload/host/warning"
)

// Schema names the results format; it changes when a field changes meaning.
const Schema = "genload.run/v1"

// Cell status values.
const (
	StatusOK          = "ok"          // measured
	StatusPartial     = "partial"     // measured, but some of the B sequences were left out (Figures.LeftOut)
	StatusError       = "error"       // the cell failed; Error says why
	StatusInterrupted = "interrupted" // the run was stopped during the cell
)

// Measured reports whether a cell of this status has figures to use (ok or partial).
func Measured(status string) bool { return status == StatusOK || status == StatusPartial }

// PluginInfo identifies a plugin used by the run.
type PluginInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
	Path    string `json:"path"`
	SHA256  string `json:"sha256"`
}

// Header describes a run; it is the first line of the JSONL file.
type Header struct {
	Type    string    `json:"type"` // "header"
	Schema  string    `json:"schema"`
	RunID   string    `json:"run_id"`
	Started time.Time `json:"started"`
	Genload string    `json:"genload_version"`
	// Target is the base URL measured; TargetKind is "builtin" or "external".
	Target     string `json:"target"`
	TargetKind string `json:"target_kind"`
	Model      string `json:"model"`
	// Context is the model context in tokens and ContextSource where it came from
	// ("server /v1/models max_model_len", "tokenizer config.json …", "bench.toml [context]").
	Context       int    `json:"context"`
	ContextSource string `json:"context_source"`
	Tokenizer     string `json:"tokenizer"`
	Corpus        string `json:"corpus"`
	CorpusRows    int    `json:"corpus_rows"`
	// PromptOverhead is the tokens of chat template + separator + suffix in every prompt;
	// MinLen and MaxLen are the clamp bounds applied to every length, in tokens.
	PromptOverhead int                   `json:"prompt_overhead"`
	MinLen         int                   `json:"min_len"`
	MaxLen         int                   `json:"max_len"`
	Plugins        map[string]PluginInfo `json:"plugins"`
	// Engine describes the built-in engine when it is the target (profile, time scale, …).
	Engine map[string]any `json:"engine,omitempty"`
	// Workers are the routing workers (routed mode), in worker-index order.
	Workers []Worker         `json:"workers,omitempty"`
	Cells   []matrix.Cell    `json:"cells"`
	Dropped []matrix.Dropped `json:"dropped,omitempty"`
	Config  *config.Config   `json:"config"`
	// Shard is set when the file holds one shard of a sharded run (genload run --shard):
	// Cells above are that shard's, each with its whole-matrix index.
	Shard *Shard `json:"shard,omitempty"`
	// Merged lists the shard files a merged run was joined from (genload merge), in shard
	// order; nil for a run measured by one process.
	Merged []MergedShard `json:"merged,omitempty"`
	// Labels are the run's [labels] from bench.toml (deployment dimensions such as
	// gpu_count = 8, draft_tokens = 3, deployment = "…": string or integer values), by which
	// latency models group and match runs; nil when the run has none. [Create] takes them
	// from Config when the header leaves them nil.
	Labels map[string]any `json:"labels,omitempty"`
	// UntilCV is the stopping rule of a run that repeated its cells until stable (genload run
	// --until-cv); nil for a run that measured each cell once or a fixed count of times.
	UntilCV *StoppingRule `json:"until_cv,omitempty"`
	// Repeats is the fixed number of times a run measured each cell, in interleaved rounds
	// (genload run --repeat N, N ≥ 2: a record per cell and repeat); 0 for a run that
	// measured each cell once or by a stopping rule (UntilCV).
	Repeats int `json:"repeats,omitempty"`
	// Structure is what genload knew of the served model's architecture when it ran — a
	// mixture of experts or dense, and where that was read — for the latency model's terms
	// (genload fit adds the expert term for a mixture of experts without flags); nil when
	// nothing was known.
	Structure *ModelStructure `json:"model_structure,omitempty"`
}

// Model structure kinds (ModelStructure.Kind).
const (
	StructureMoE   = "moe"
	StructureDense = "dense"
)

// ModelStructure is the architecture of the served model as far as the latency model needs
// it: a mixture of experts with Experts routed experts per layer (E), Active of them per token
// (k), or a dense model (Experts and Active 0). Source says where it was read, e.g. "built-in
// engine profile moe-30b-a3b (moe_experts = 128, moe_top_k = 8)" or "/models/q/config.json
// [num_experts = 128, num_experts_per_tok = 8]".
type ModelStructure struct {
	Kind    string `json:"kind"`
	Experts int    `json:"experts,omitempty"`
	Active  int    `json:"active,omitempty"`
	Source  string `json:"source"`
}

// StoppingRule is the rule a run with repeats stopped each cell by (see package repeat): a
// cell was stable when the one-sided Confidence upper bound of its per-forward CV was within
// TargetCV, after MinRepeats to MaxRepeats repeats.
type StoppingRule struct {
	TargetCV   float64 `json:"target_cv"` // fraction (0.05 = 5 %)
	MinRepeats int     `json:"min_repeats"`
	MaxRepeats int     `json:"max_repeats"`
	Confidence float64 `json:"confidence"` // one-sided, in (0, 1)
}

// Shard says which part of a sharded run's matrix a results file holds.
type Shard struct {
	Index int `json:"index"` // 0-based, like a Kubernetes Indexed Job's JOB_COMPLETION_INDEX
	Count int `json:"count"` // number of shards
	// MatrixCells is the number of cells of the whole matrix, over all shards.
	MatrixCells int `json:"matrix_cells"`
}

// MergedShard is one shard file of a merged run.
type MergedShard struct {
	Index  int    `json:"index"`
	File   string `json:"file"`
	RunID  string `json:"run_id"`
	Target string `json:"target"`
	// Started and Status are the shard's own (Status from its footer).
	Started time.Time `json:"started"`
	Status  string    `json:"status"`
	Cells   int       `json:"cells"`
}

// Worker is one routing worker of a run (its headers are not recorded).
type Worker struct {
	Name string `json:"name"`
	URL  string `json:"url"`
	// Context is the model context its server's /v1/models reported, in tokens (0: not
	// said).
	Context int `json:"context,omitempty"`
}

// Lengths are the realised prompt lengths of a cell, in tokens.
type Lengths struct {
	Target  int     `json:"target"`  // L
	Min     int     `json:"min"`     // smallest prompt
	Mean    float64 `json:"mean"`    // mean prompt length after clamping
	Max     int     `json:"max"`     // longest prompt
	Clamped int     `json:"clamped"` // prompts the host clamped to [min_len, context − max_tokens]
	Each    []int   `json:"each"`    // every prompt's length, prompt order
}

// Cell is one cell's result line.
type Cell struct {
	Type    string      `json:"type"` // "cell"
	Cell    matrix.Cell `json:"cell"`
	Status  string      `json:"status"`
	Error   string      `json:"error,omitempty"`
	Started time.Time   `json:"started"`
	Elapsed Millis      `json:"elapsed_ms"`
	Lengths Lengths     `json:"lengths"`
	// Warnings are the cell's warnings, each a sentence or more with its figures and cause;
	// WarningNames[i] is the catalogue name of Warnings[i] (package warning: a stable name
	// per kind, for grouping, filtering and the CSV). Records written before names existed
	// have no warning_names: read the pairs with [Cell.NamedWarnings], which names such
	// texts from the catalogue, and add warnings with [Cell.Warn], which keeps the two
	// lists in step.
	Warnings     []string       `json:"warnings,omitempty"`
	WarningNames []warning.Name `json:"warning_names,omitempty"`
	// Workers is, in routed mode, the worker index of each prompt (prompt order).
	Workers []int `json:"workers,omitempty"`
	// Figures are the measured figures (nil when the cell failed before measuring).
	Figures *measure.Figures `json:"figures,omitempty"`
	// PerServer holds, in a cell routed over several servers, each server's own figures
	// over the sequences routed to it (Figures mixes them); nil otherwise.
	PerServer []ServerFigures `json:"per_server,omitempty"`
	// PromptTokenDeviation is the server-counted prompt tokens minus the tokens genload
	// built: 0 with token-id prompts; the re-tokenization drift with text prompts.
	PromptTokenDeviation int `json:"prompt_token_deviation"`
	// Server holds the figures from the target's /metrics around the measured request:
	// step time, tokens per step, the engine's truth (built-in engine), and batch
	// occupancy sampled during the cell. Nil when /metrics was not used.
	Server *metrics.CellMetrics `json:"server,omitempty"`
	// CacheBefore is how much of the cell's prompts the server already held in its prefix
	// cache when genload first sent them in this cell (the warmup's usage, or the measured
	// requests' without a warmup); nil when its usage did not count cached tokens.
	CacheBefore *PromptCache `json:"cache_before,omitempty"`
	// Retries are the resends of the cell's requests; nil when none was resent.
	Retries *Retries `json:"retries,omitempty"`
	// StepLog holds the figures of the server's step log during the cell (attainment and
	// forward time, see steplog.Attain), attached by genload steplog; nil without one.
	StepLog *steplog.Figures `json:"step_log,omitempty"`
	// WarmupElapsed and MeasuredElapsed are the wall time of the cell's warmup request(s)
	// (send to last byte, retries included) and of its measured request(s), the parts of
	// Elapsed a GPU spent on the cell's requests; 0 (absent) when the run did not record
	// them.
	WarmupElapsed   Millis `json:"warmup_ms,omitempty"`
	MeasuredElapsed Millis `json:"measured_ms,omitempty"`
	// Client is what genload's client spent on the measured requests (body build and write
	// times, its CPU share, the scheduler's latency); nil when not recorded.
	Client *recording.ClientLoad `json:"client,omitempty"`
	// Repeat is the 1-based repeat of the cell in a run that measures cells several times
	// (genload run --until-cv): the file then holds one record per (cell, repeat). 0
	// (absent) in a run that measures each cell once.
	Repeat int `json:"repeat,omitempty"`
	// Remeasured are the attempts of the cell's measured requests that were sent again
	// ([run] remeasure_overrun), oldest first: each one's built-in engine lateness was over
	// the stated share (metrics.Overrun.Disturbed), so its figures were not kept. The
	// record's figures, client and server figures are of the attempt after the last of them;
	// its Elapsed and MeasuredElapsed include them all. Nil when the first attempt was kept.
	Remeasured []Remeasured `json:"remeasured,omitempty"`
}

// Remeasured is one discarded attempt of a cell's measured requests: how late the built-in
// engine's steps ran while it served them, how long the attempt took (send to last byte),
// and when it ended (wall clock, UTC; a step log's span of the kept attempt starts there).
type Remeasured struct {
	Overrun  metrics.Overrun `json:"overrun"`
	Measured Millis          `json:"measured_ms"`
	Ended    time.Time       `json:"ended"`
}

// PromptCache counts the prompt tokens of a cell's first requests (Warmup: its warmup's, else
// its measured requests') and, of them, those the server served from its prefix cache (its
// usage's prompt_tokens_details.cached_tokens): tokens an earlier run, repeat or cell had
// sent, since the cell itself had sent none yet.
type PromptCache struct {
	Cached int  `json:"cached_tokens"`
	Prompt int  `json:"prompt_tokens"`
	Warmup bool `json:"warmup"`
}

// PrecachedShare is the share of a cell's prompt tokens found in the server's prefix cache
// before the cell sent them above which its prompts count as already cached ([Cell.WasCached]).
// Prompts sent again whole are found to 96–99.6 % (all but their last partial block); within
// one fresh run of the default matrix, cells that reuse corpus rows at a shorter L found 6–57 %
// (the shorter prompt is a prefix of the longer), which is not "already cached".
const PrecachedShare = 0.9

// OKWithoutFwd reports whether the cell is ok but has no per-forward figure: its sequences
// completed and could not be timed (its warnings say why). The footer and the report count
// such cells apart.
func (c *Cell) OKWithoutFwd() bool {
	return c.Status == StatusOK && (c.Figures == nil || c.Figures.PerForward.N == 0)
}

// WasCached reports whether the cell's prompts were already in the server's prefix cache
// before the cell sent them (CacheBefore above PrecachedShare): its warmup (or, without one,
// its measured requests) found them there, sent by an earlier run, repeat or cell.
func (c *Cell) WasCached() bool {
	p := c.CacheBefore
	return p != nil && p.Prompt > 0 && float64(p.Cached) > PrecachedShare*float64(p.Prompt)
}

// ServerFigures are one server's figures in a cell routed over several servers, computed as
// a cell's figures are (measure.Compute) over the sequences routed to it.
type ServerFigures struct {
	// Server names it: its base URL (with the server header's value for a worker grid
	// behind one URL); Workers are the workers on it, Sequences the B routed to it and
	// MeanPromptLen their prompts' mean length in tokens.
	Server        string   `json:"server"`
	Workers       []string `json:"workers"`
	Sequences     int      `json:"sequences"`
	MeanPromptLen float64  `json:"mean_prompt_len"`
	// Counted, PerForward and PerForwardReason are its share's per-forward figures (see
	// measure.Figures).
	Counted          int             `json:"counted"`
	PerForward       measure.Summary `json:"per_forward"`
	PerForwardReason string          `json:"per_forward_reason,omitempty"`
	// Window is the full-batch figure of its share: valid only where it ran every sequence
	// routed to it together (its gauge or the client's marks say so).
	Window measure.Window `json:"window"`
	// Attainment is whether its share decoded as one batch as the client's marks show it;
	// Occupancy its running gauge during the cell against its share (nil without one).
	Attainment measure.Attainment `json:"attainment"`
	Occupancy  *metrics.Occupancy `json:"occupancy,omitempty"`
}

// Retries counts a cell's resends: Warmup and Measured those counted against [warmup]
// retries (429, 5xx, connection failures before a response), Free those that were not (a
// keep-alive connection the server had closed, a resend with larger header buffers), Reasons
// every resend by its reason.
type Retries struct {
	Warmup   int            `json:"warmup"`
	Measured int            `json:"measured"`
	Free     int            `json:"free,omitempty"`
	Reasons  map[string]int `json:"reasons,omitempty"`
}

// Footer closes a run.
type Footer struct {
	Type     string    `json:"type"` // "footer"
	Finished time.Time `json:"finished"`
	Elapsed  Millis    `json:"elapsed_ms"` // wall time of all the run's sessions (see Resume)
	Status   string    `json:"status"`     // "ok", "error", "interrupted"
	Error    string    `json:"error,omitempty"`
	OK       int       `json:"cells_ok"`
	Partial  int       `json:"cells_partial"`
	Failed   int       `json:"cells_failed"`
	// OKWithoutFwd counts the ok cells (in OK) that have no per-forward figure: their
	// sequences completed but could not be timed (the reason is in the cell's warnings).
	OKWithoutFwd int `json:"cells_ok_without_fwd,omitempty"`
}

// Run is a whole run as read back from disk.
type Run struct {
	Header Header  `json:"header"`
	Cells  []Cell  `json:"cells"`
	Footer *Footer `json:"footer,omitempty"`
}

// Name is how messages call the run: its run id, or "run N" when it has none, N = i+1 for the
// run at index i of the runs a command was given.
func (r *Run) Name(i int) string {
	if r.Header.RunID != "" {
		return r.Header.RunID
	}
	return "run " + strconv.Itoa(i+1)
}

// ConfigMaxTokens is the config's max_tokens (0 for a header without a config).
func (h Header) ConfigMaxTokens() int {
	if h.Config == nil {
		return 0
	}
	return h.Config.MaxTokens
}

// ConfigMode is the config's mode ("" for a header without a config).
func (h Header) ConfigMode() string {
	if h.Config == nil {
		return ""
	}
	return h.Config.Mode
}

// PluginName is the plugin of kind ("lengths", "router") as "name version", "–" when the run
// had none.
func (h Header) PluginName(kind string) string {
	p, ok := h.Plugins[kind]
	if !ok {
		return "–"
	}
	return p.Name + " " + p.Version
}

// Millis is a duration written as float64 milliseconds in JSON.
type Millis time.Duration

// MarshalJSON writes milliseconds with microsecond resolution.
func (m Millis) MarshalJSON() ([]byte, error) {
	return []byte(formatMs(time.Duration(m))), nil
}

// UnmarshalJSON reads milliseconds.
func (m *Millis) UnmarshalJSON(b []byte) error {
	d, err := parseMs(b)
	*m = Millis(d)
	return err
}

// Warn adds warnings to the cell: their texts to Warnings, their names to WarningNames.
func (c *Cell) Warn(ws ...warning.Warning) {
	c.alignNames()
	for _, w := range ws {
		c.Warnings = append(c.Warnings, w.Text)
		c.WarningNames = append(c.WarningNames, w.Name)
	}
}

// alignNames makes WarningNames as long as Warnings, naming from the catalogue the texts
// added without a name (warning.Classify).
func (c *Cell) alignNames() {
	if len(c.WarningNames) > len(c.Warnings) {
		c.WarningNames = c.WarningNames[:len(c.Warnings)]
	}
	for i := len(c.WarningNames); i < len(c.Warnings); i++ {
		c.WarningNames = append(c.WarningNames, warning.Classify(c.Warnings[i]))
	}
}

// NamedWarnings returns the cell's warnings with their names: WarningNames[i] where the
// record has it, else the catalogue's name of the text (a record written before names
// existed, a text appended to Warnings alone, or a retired name: warning.Resolve).
func (c *Cell) NamedWarnings() []warning.Warning {
	out := make([]warning.Warning, len(c.Warnings))
	for i, t := range c.Warnings {
		n := warning.Name("")
		if i < len(c.WarningNames) {
			n = c.WarningNames[i]
		}
		n = warning.Resolve(n, t)
		out[i] = warning.Warning{Name: n, Text: t}
	}
	return out
}
