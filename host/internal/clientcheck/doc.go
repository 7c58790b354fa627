// Package clientcheck holds end-to-end tests of the client packages (host/dispatch,
// host/sse, host/measure, host/scrape) against the built-in engine, which is their
// ground truth. It has no non-test code; the client packages never import the engine.
package clientcheck
