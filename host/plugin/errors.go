package plugin

import (
	"fmt"
	"strings"

	"github.com/genload/genload/sdk/abi"
)

// Error is every error returned by this package about a plugin. Its message is one line:
//
//	plugin gamma (build/plugins/gamma.wasm) [genload_init]: status 1 (bad input): config: json: unknown field "kk"; fix the plugin's table in bench.toml
//
// The guest's captured stdout/stderr and the full last-error text (a panic's stack, say) are in
// Output and Detail for a verbose display.
type Error struct {
	// Plugin is the plugin's name from its info, or the file name before the info is known.
	Plugin string
	// Path is the .wasm file.
	Path string
	// Export is the ABI export being called or checked, e.g. "genload_lengths"; "" for file-level
	// problems.
	Export string
	// Status is the guest's status for a failed call that returned one, else abi.OK.
	Status abi.Status
	// Fatal is true when the instance was discarded (trap, exit, timeout); later calls fail.
	Fatal bool
	// Err is the cause.
	Err error
	// Hint says what to do.
	Hint string
	// Detail is the full genload_last_error text (may span lines; Err holds its first line).
	Detail string
	// Output is the guest's stdout and stderr captured during the failing call (first 8 KiB).
	Output string
}

// Error renders the one-line message.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("plugin ")
	b.WriteString(e.Plugin)
	if e.Path != "" {
		fmt.Fprintf(&b, " (%s)", e.Path)
	}
	if e.Export != "" {
		fmt.Fprintf(&b, " [%s]", e.Export)
	}
	b.WriteString(": ")
	if e.Status != abi.OK {
		fmt.Fprintf(&b, "status %d (%s): ", e.Status, e.Status)
	}
	b.WriteString(e.Err.Error())
	if e.Hint != "" {
		b.WriteString("; ")
		b.WriteString(e.Hint)
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// firstLine returns s up to its first newline, trimmed.
func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return strings.TrimSpace(s[:i])
	}
	return s
}

// crashLine finds the Go runtime's "panic: …" or "fatal error: …" line in captured guest output.
func crashLine(out string) string {
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "fatal error: ") {
			return l
		}
	}
	return ""
}

// cappedBuffer keeps the first limit bytes written to it (guest stdout/stderr of one call).
type cappedBuffer struct {
	buf   []byte
	limit int
	lost  int
}

// Write keeps what fits and counts the rest; it never fails, so the guest never sees EIO.
func (c *cappedBuffer) Write(p []byte) (int, error) {
	n := min(len(p), c.limit-len(c.buf))
	c.buf = append(c.buf, p[:n]...)
	c.lost += len(p) - n
	return len(p), nil
}

// String returns the captured bytes, noting how many were dropped.
func (c *cappedBuffer) String() string {
	if c.lost > 0 {
		return fmt.Sprintf("%s\n… %d more bytes dropped", c.buf, c.lost)
	}
	return string(c.buf)
}

// reset empties the buffer before a call.
func (c *cappedBuffer) reset() { c.buf, c.lost = c.buf[:0], 0 }
