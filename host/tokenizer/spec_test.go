package tokenizer

import (
	"strings"
	"testing"
)

// TestParseSpecErrors pins the position of each malformed tokenizer.json's error: the line
// and byte (0-based, counted by hand) where reading stopped or the value that was rejected.
func TestParseSpecErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"model":{"vocab":{"a":0,"b":-1}}}`, `json line 1 (byte 29): [model.vocab] "b": want a non-negative integer id`},
		{`{"model":{"vocab":{"a":1073741825}}}`, `json line 1 (byte 23): [model.vocab] "a": id 1073741825 out of range`},
		{"{\n\"model\":{\"vocab\":{\"a\":0},\"merges\":[\"a b\",[\"a\"]]}}", `json line 2 (byte 43): [model.merges][1]: want a pair of strings, got 1`},
		{`{"model":{"vocab":{},"merges":["ab"]}}`, `json line 1 (byte 31): [model.merges][0] "ab": no space separator`},
		{`{"model":{"vocab":{},"merges":[1]}}`, `json line 1 (byte 31): [model.merges][0]: want a string or a pair`},
		{`{"model":{"vocab":{},"merges":["a\qb"]}}`, `json line 1 (byte 31): [model.merges][0]: invalid character 'q' in string escape code`},
		{`{"model":{"vocab":{"a" 0}}}`, `json line 1 (byte 23): invalid JSON at '0'`},
		{"{\"model\":\n{\"vocab\":{\"a\":0}", `json line 2 (byte 26): unexpected end of JSON`},
		{`{"model":{"vocab":{"a":0}}} x`, `json line 1 (byte 28): trailing data after the top-level object`},
		{`[]`, `invalid JSON: want a JSON object`},
	} {
		_, err := parseSpec([]byte(tc.in), "f.json")
		if err == nil || !strings.HasSuffix(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "tokenizer: f.json: ") {
			t.Errorf("parseSpec(%q) error = %v, want %q", tc.in, err, "tokenizer: f.json: "+tc.want)
		}
	}
}

// TestParseSpecEscapes reads vocabulary keys and merges with escapes as encoding/json
// decodes them.
func TestParseSpecEscapes(t *testing.T) {
	fs, err := parseSpec([]byte(`{"model":{"type":"BPE","vocab":{"\"":0,"\\":1,"\u00e9":2,"\ud83d\ude00":3,"x":4},"merges":["\" \\",["\u00e9","x"]]}}`), "f.json")
	if err != nil {
		t.Fatal(err)
	}
	for tok, id := range map[string]int32{`"`: 0, `\`: 1, "é": 2, "😀": 3, "x": 4} {
		if got, ok := fs.model.vocab[tok]; !ok || got != id {
			t.Errorf("vocab[%q] = %d, %v; want %d", tok, got, ok, id)
		}
	}
	if want := [][2]string{{`"`, `\`}, {"é", "x"}}; len(fs.model.merges) != 2 || fs.model.merges[0] != want[0] || fs.model.merges[1] != want[1] {
		t.Errorf("merges = %q, want %q", fs.model.merges, want)
	}
}
