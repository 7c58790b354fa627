// Package importrules has no code: its test checks the package graph against the import rules
// the design states (only host/dispatch imports fasthttp, only host/plugin imports wazero, the
// built-in engine and the client share no package, recording, scrape/metrics, measure and
// report depend on no transport), using `go list -deps -json` of the whole module, so that an
// import breaking one fails `make test`.
package importrules
