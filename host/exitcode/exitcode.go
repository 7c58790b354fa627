// Package exitcode defines genload's process exit codes and attaches them to errors.
//
// The code is attached where the decision is made — config loading attaches InvalidConfig, run
// and the CLI attach PluginRejected where they load or call a plugin and TargetFailed where the
// server fails, … — and resolved once at the top by [Of], so that the CLI never exits 0 after an
// error and never has to guess what an error meant. A panic is a bug whatever goroutine it
// happens in: goroutines are started with [Go] (or defer [Recover]), so that one ends the process
// with [Panic] and its stack on stderr, not with Go's own exit status 2, which is [Usage].
package exitcode

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
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
	// Inconclusive: a verdict could not be reached — the gate's bounds straddle a threshold
	// ("cannot tell"); the message says how many repeats of which run would decide it.
	Inconclusive Code = 8
	// OutOfRange: points asked for lie outside a latency model's measured range and were not
	// predicted or judged (predict, gate); the others were, and are printed.
	OutOfRange Code = 9
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

// Go runs fn in a new goroutine under [Recover]: a panic in fn ends the process with [Panic].
func Go(fn func()) {
	go func() {
		defer Recover()
		fn()
	}()
}

// Recover, deferred at the top of a goroutine (`defer exitcode.Recover()`), reports a panic of
// that goroutine on stderr — the value and the goroutine's stack, see [PanicMessage] — and exits
// the process with [Panic] (7). Without a panic it does nothing. It must be deferred directly
// (recover only stops a panic from the deferred function itself).
func Recover() {
	if r := recover(); r != nil {
		_, _ = io.WriteString(os.Stderr, PanicMessage(r, debug.Stack()))
		os.Exit(int(Panic))
	}
}

// PanicMessage is the report of a recovered panic r with the stack debug.Stack gave at the
// recover: "genload: internal error (a bug, please report it): panic: <r>" and the stack on the
// following lines, ending in a newline.
func PanicMessage(r any, stack []byte) string {
	msg := fmt.Sprintf("genload: internal error (a bug, please report it): panic: %v\n", r)
	if len(stack) > 0 {
		msg += "\n" + string(stack)
		if stack[len(stack)-1] != '\n' {
			msg += "\n"
		}
	}
	return msg
}
