package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/genload/genload/host/exitcode"
)

// ReadFiles reads the results files paths in order (.json or .jsonl, as [ReadFile]) for a
// command that fits or compares them. A file that cannot be read or decoded is invalid input
// (exitcode.InvalidConfig; none given: [ErrNoRuns]); a JSON syntax error in a .json file (NaN,
// Infinity: JSON has no such numbers) is placed at its file:line:column and byte offset.
// Unlike [ReadRuns] it does not refuse a run given twice: the caller decides what that means.
func ReadFiles(paths []string) ([]*Run, error) {
	if len(paths) == 0 {
		return nil, exitcode.With(exitcode.InvalidConfig, ErrNoRuns)
	}
	runs := make([]*Run, len(paths))
	for i, p := range paths {
		r, err := ReadFile(p)
		if err != nil {
			return nil, exitcode.With(exitcode.InvalidConfig, placeSyntaxError(p, err))
		}
		runs[i] = r
	}
	return runs, nil
}

// placeSyntaxError returns err with the line, column and offset of a *json.SyntaxError in the
// .json file at path (a .jsonl reader names its line itself); other errors unchanged.
func placeSyntaxError(path string, err error) error {
	var se *json.SyntaxError
	if !errors.As(err, &se) || filepath.Ext(path) != ".json" || errors.Is(err, ErrNotResults) {
		return err
	}
	b, rerr := os.ReadFile(path)
	if rerr != nil || se.Offset < 1 || se.Offset > int64(len(b)) {
		return fmt.Errorf("%w (at byte offset %d)", err, se.Offset)
	}
	at := se.Offset - 1 // the offending byte: Offset counts the bytes read, it included
	line := 1 + bytes.Count(b[:at], []byte("\n"))
	col := int(at) - bytes.LastIndexByte(b[:at], '\n')
	hint := ""
	if rest := b[at:]; bytes.HasPrefix(rest, []byte("NaN")) || bytes.HasPrefix(rest, []byte("Inf")) {
		hint = " (JSON has no NaN or Infinity: the figure written there is not a number)"
	}
	return fmt.Errorf("results: %s:%d:%d (byte offset %d): %w%s", path, line, col, se.Offset, se, hint)
}
