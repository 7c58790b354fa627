// Package conformance holds genload's conformance suite: for each behaviour of a real
// OpenAI-compatible server (an engine quirk, or one of the engine's own knobs such as
// max_num_seqs or speculative decoding), a test starts the built-in engine at time scale 1
// with that behaviour on, runs a whole genload run in-process against it once, and holds
// every cell's headline per-forward figures to what the row states: present and within 1 % of
// the engine's true time per decode forward pass over the very forward passes the figure says
// it timed (Figures.PerForwardPasses and PerForwardTrail, Window.Steps and Trail), the
// full-batch window inside the steps where every counted sequence decoded; or absent, with
// the reason the row expects among the cell's warnings — plus what the behaviour must make
// genload say (a partial status, a truncation error, the setting to change).
//
// The truth is the engine's per-sequence log (engine.Config.SeqLog: each sequence's first and
// last step) and its step log (engine.Config.StepLog: when each step ended), which no quirk
// changes. The engine also hides its genload_engine_* metrics (quirk hide-truth), so that
// genload is checked on what any other server offers. It has no non-test code.
package conformance
