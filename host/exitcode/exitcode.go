// Package exitcode defines genload's process exit codes and attaches them to errors.
//
// The code is attached where the decision is made (config loading attaches InvalidConfig, the
// plugin host attaches PluginRejected, …) and resolved once at the top by [Of], so that
// the CLI never exits 0 after an error and never has to guess what an error meant.
package exitcode

import (
	"errors"
	"fmt"
)

// Code is a process exit code.
type Code int

const (
	// OK: the command did what was asked.
	OK Code = 0
	// Failure: a generic failure not covered below (I/O error, bug).
	Failure Code = 1
	// Usage: bad command-line arguments or flags.
	Usage Code = 2
	// InvalidConfig: bench.toml, the corpus or the tokenizer files are invalid.
	InvalidConfig Code = 3
	// PluginRejected: a WebAssembly plugin could not be loaded or failed a call.
	PluginRejected Code = 4
	// TargetFailed: the target server was unreachable, answered non-200 or sent a malformed
	// stream. Cells measured before the failure are kept on disk.
	TargetFailed Code = 5
	// ThresholdsFailed: a measurement crossed a configured threshold (e.g. per-cell CV).
	ThresholdsFailed Code = 6
	// Panic: genload itself panicked (a bug: please report it).
	Panic Code = 7
	// Interrupted: SIGINT/SIGTERM stopped the run; what was measured is on disk (128+SIGINT).
	Interrupted Code = 130
)

// Error is an error that carries the exit code the process should end with.
type Error struct {
	Code Code
	Err  error
}

// Error returns the wrapped error's message (the code is not part of it).
func (e *Error) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error, for errors.Is and errors.As.
func (e *Error) Unwrap() error { return e.Err }

// With attaches code to err; nil stays nil. An error that already carries a code keeps the
// innermost one (the decision made closest to the cause wins).
func With(code Code, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return &Error{Code: code, Err: err}
}

// Errorf is fmt.Errorf with a code attached.
func Errorf(code Code, format string, args ...any) error {
	return &Error{Code: code, Err: fmt.Errorf(format, args...)}
}

// Of returns the code carried by err: OK for nil, Failure when err carries none.
func Of(err error) Code {
	if err == nil {
		return OK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Failure
}
