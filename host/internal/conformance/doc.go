// Package conformance holds genload's conformance suite: for each behaviour of a real
// OpenAI-compatible server (an engine quirk, or one of the engine's own knobs such as
// max_num_seqs or speculative decoding), a test starts the built-in engine at time scale 1
// with that behaviour on, runs a whole genload run in-process against it, and holds every
// cell's headline per-forward figure to the engine's truth: within 1 % of the true decode
// step time over the same steps, or absent with its reason shown in the cell's warnings —
// plus what the behaviour must make genload say (a partial status, a truncation error, the
// setting to change).
//
// The truth is the engine's per-sequence log (engine.Config.SeqLog): the steps and step end
// times of each sequence's first and last token, which no quirk changes. The engine also
// hides its genload_engine_* metrics (quirk hide-truth), so that genload is checked on what
// any other server offers. It has no non-test code.
package conformance
