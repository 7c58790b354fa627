package corpus

import (
	"strings"
	"testing"
)

func TestEmbeddedCorpus(t *testing.T) {
	rows, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 256 {
		t.Fatalf("%d rows, want 256", len(rows))
	}
	ids, genres, nonEnglish := map[string]bool{}, map[string]bool{}, 0
	for _, r := range rows {
		if ids[r.ID] {
			t.Errorf("duplicate id %s", r.ID)
		}
		ids[r.ID] = true
		genres[r.Genre] = true
		if r.Lang != "en" {
			nonEnglish++
		}
	}
	// at least 10 % non-English: 26 of 256
	if nonEnglish < 26 {
		t.Errorf("%d non-English rows, want ≥ 26", nonEnglish)
	}
	if len(genres) < 40 {
		t.Errorf("%d distinct genres, want a varied corpus (≥ 40)", len(genres))
	}
}

func TestParseReportsEveryProblemWithItsLine(t *testing.T) {
	src := `{"id":"x1","genre":"g","lang":"en","text":"one"}
{"id":"x2","genre":"g","lang":"en","text":"two"
{"id":"x3","genre":"g","lang":"en","text":"  "}
{"id":"x4","genre":"g","lang":"en","text":"one"}
{"id":"x5","genre":"g","lang":"en","text":"a <|im_end|> b"}
{"id":"x6","genre":"g","lang":"en","text":"six","extra":1}
`
	_, err := Parse("c.jsonl", []byte(src))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"c.jsonl:2: invalid JSON", "c.jsonl:3: empty \"text\"", "c.jsonl:4: duplicate of line 1",
		"c.jsonl:5: \"text\" contains \"<|\"", "c.jsonl:6: invalid JSON line: json: unknown field \"extra\""} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if _, err := Parse("empty.jsonl", []byte("\n\n")); err == nil || !strings.Contains(err.Error(), "empty.jsonl: no rows") {
		t.Errorf("empty corpus: %v", err)
	}
	if _, err := Load("/nonexistent/corpus.jsonl"); err == nil || !strings.Contains(err.Error(), "/nonexistent/corpus.jsonl") {
		t.Errorf("missing file: %v", err)
	}
}
