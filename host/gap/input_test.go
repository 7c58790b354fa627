package gap

import (
	"os"
	"path/filepath"
	"testing"
)

// A file of another kind given as the replay says what it is, not `schema ""`.
func TestReplayOfAnotherKindSaysWhatItIs(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, body, want string }{
		{"res.json", `{"header": {"type": "header", "schema": "genload.run/v1"}, "cells": []}`,
			`: a results file (schema "genload.run/v1" in its header), want a replay summary, schema "genload.replay/v1" (the <id>.json genload replay writes)`},
		{"model.json", `{"schema": "genload.latmodel/v1"}`,
			`: a model file (schema "genload.latmodel/v1"), want a replay summary, schema "genload.replay/v1" (the <id>.json genload replay writes)`},
	} {
		p := filepath.Join(dir, tc.name)
		if err := os.WriteFile(p, []byte(tc.body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := readSummary(p); err == nil || err.Error() != p+tc.want {
			t.Errorf("%s: %v\nwant %s%s", tc.name, err, p, tc.want)
		}
	}
}
