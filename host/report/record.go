// Package report owns genload's results: the per-run JSONL file appended (and fsynced) one cell
// at a time, the final JSON document and CSV, and the markdown table.
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
// results/<run-id>.csv has one row per cell (columns in [CSVHeader]). Durations are in
// milliseconds (float64) in JSON and CSV; lengths in tokens.
package report

import (
	"time"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/measure"
	"github.com/genload/genload/host/scrape/scraped"
	"github.com/genload/genload/host/steplog"
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
	Type     string      `json:"type"` // "cell"
	Cell     matrix.Cell `json:"cell"`
	Status   string      `json:"status"`
	Error    string      `json:"error,omitempty"`
	Started  time.Time   `json:"started"`
	Elapsed  Millis      `json:"elapsed_ms"`
	Lengths  Lengths     `json:"lengths"`
	Warnings []string    `json:"warnings,omitempty"`
	// Workers is, in routed mode, the worker index of each prompt (prompt order).
	Workers []int `json:"workers,omitempty"`
	// Figures are the measured figures (nil when the cell failed before measuring).
	Figures *measure.Figures `json:"figures,omitempty"`
	// PromptTokenDeviation is the server-counted prompt tokens minus the tokens genload
	// built: 0 with token-id prompts; the re-tokenization drift with text prompts.
	PromptTokenDeviation int `json:"prompt_token_deviation"`
	// Server holds the figures from the target's /metrics around the measured request:
	// step time, tokens per step, the engine's truth (built-in engine), and batch
	// occupancy sampled during the cell. Nil when /metrics was not used.
	Server *scraped.CellMetrics `json:"server,omitempty"`
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
	// Repeat is the 1-based repeat of the cell in a run that measures cells several times
	// (genload run --until-cv): the file then holds one record per (cell, repeat). 0
	// (absent) in a run that measures each cell once.
	Repeat int `json:"repeat,omitempty"`
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
}

// Run is a whole run as read back from disk.
type Run struct {
	Header Header  `json:"header"`
	Cells  []Cell  `json:"cells"`
	Footer *Footer `json:"footer,omitempty"`
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
