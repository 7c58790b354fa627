package results

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/genload/genload/host/exitcode"
)

// A syntax error in a .json results file is placed at its line, column and byte offset, with
// a hint for NaN and Infinity; every read error is invalid input.
func TestReadFilesPlacesSyntaxErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// The N of NaN is byte 68 (1-based) and the newline byte 41: line 2, column 68 − 41 = 27.
	nan := write("nan.json", "{\"header\": {\"schema\": \"genload.run/v1\"},\n \"cells\": [{\"elapsed_ms\": NaN}]}")
	// The I of Infinity is byte 67 of the one line; the stray comma byte 54, after two newlines
	// (bytes 41 and 42): line 3, column 54 − 42 = 12.
	inf := write("inf.json", "{\"header\": {\"schema\": \"genload.run/v1\"}, \"cells\": [{\"elapsed_ms\": Infinity}]}")
	comma := write("comma.json", "{\"header\": {\"schema\": \"genload.run/v1\"},\n\n \"cells\": [,]}")
	cases := []struct {
		name  string
		paths []string
		want  string // the error's text after "results: "
		is    error
	}{
		{"none", nil, "no results file given", ErrNoRuns},
		{"NaN", []string{nan}, nan + ":2:27 (byte offset 68): invalid character 'N' looking for beginning of value (JSON has no NaN or Infinity: the figure written there is not a number)", nil},
		{"Infinity", []string{inf}, inf + ":1:67 (byte offset 67): invalid character 'I' looking for beginning of value (JSON has no NaN", nil},
		{"no hint for another byte", []string{comma}, comma + ":3:12 (byte offset 54): invalid character ',' looking for beginning of value", nil},
		{"missing file", []string{filepath.Join(dir, "none.json")}, "open " + filepath.Join(dir, "none.json"), os.ErrNotExist},
	}
	for _, tc := range cases {
		_, err := ReadFiles(tc.paths)
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		if exitcode.Of(err) != exitcode.InvalidConfig || !strings.Contains(err.Error(), tc.want) || (tc.is != nil && !errors.Is(err, tc.is)) {
			t.Errorf("%s: exit %d, %v\nwant exit %d with %q", tc.name, exitcode.Of(err), err, exitcode.InvalidConfig, tc.want)
		}
		if tc.name == "no hint for another byte" && strings.Contains(err.Error(), "NaN") {
			t.Errorf("%s: hint given: %v", tc.name, err)
		}
	}
}
