package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/genload/genload/host/results"
)

// FuzzReadFile feeds ReadFile arbitrary JSONL. Whatever it accepts must survive the round trip
// through the JSON writer unchanged: WriteJSON of the run, read back, encodes to the same bytes
// (a reader that accepted a value it then cannot write, or wrote differently, would fail here).
// Seeds: the golden run's JSONL, a torn last line, an unknown record type.
func FuzzReadFile(f *testing.F) {
	if b, err := os.ReadFile(filepath.Join("testdata", "golden", "run.jsonl")); err == nil {
		f.Add(b)
		f.Add(b[:len(b)-40])
	}
	f.Add([]byte(`{"type":"header","schema":"genload.run/v1","run_id":"x"}` + "\n" + `{"type":"what"}` + "\n"))
	f.Add([]byte(`{"type":"header","schema":"genload.run/v1","config":{"seed":-1}}` + "\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		dir := t.TempDir()
		p := filepath.Join(dir, "f.jsonl")
		if err := os.WriteFile(p, src, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := results.ReadFile(p)
		if err != nil {
			return
		}
		once, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("a run ReadFile accepted does not encode: %v", err)
		}
		q := filepath.Join(dir, "f.json")
		if err := results.WriteJSON(q, r); err != nil {
			t.Fatalf("WriteJSON: %v", err)
		}
		r2, err := results.ReadFile(q)
		if err != nil {
			t.Fatalf("the JSON written from an accepted run does not read back: %v", err)
		}
		twice, _ := json.Marshal(r2)
		if !bytes.Equal(once, twice) {
			t.Fatalf("round trip changed the run:\n once %s\ntwice %s", once, twice)
		}
	})
}
