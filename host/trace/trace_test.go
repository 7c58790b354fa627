package trace

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func write(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadsTheMooncakeFormatWithNoOption(t *testing.T) {
	p := write(t, "conv.jsonl", `{"timestamp": 0, "input_length": 6758, "output_length": 500, "hash_ids": [0, 1, 2]}

{"timestamp": 27.5, "input_length": 1200, "output_length": 3, "hash_ids": [0, 4, 5]}
`)
	tr, err := Read(p, "", Fields{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Format != FormatJSONL || !tr.HasTime || !tr.HasOutput || !tr.HasHashes || tr.HasGroup {
		t.Fatalf("format %q time %v output %v hashes %v group %v", tr.Format, tr.HasTime, tr.HasOutput, tr.HasHashes, tr.HasGroup)
	}
	if len(tr.Requests) != 2 {
		t.Fatalf("%d requests, want 2", len(tr.Requests))
	}
	q := tr.Requests[1]
	if q.Input != 1200 || q.Output != 3 || q.Arrival != 27500*time.Microsecond || !slices.Equal(q.Hashes, []int64{0, 4, 5}) {
		t.Errorf("request 1 = %+v", q)
	}
	if !strings.HasSuffix(q.Src, "conv.jsonl:3") {
		t.Errorf("src %q, want the third line (the blank line counts)", q.Src)
	}
}

func TestReadsCSVByNamedColumnsWithGroups(t *testing.T) {
	p := write(t, "log.csv", "deployment,prompt_tokens,completion_tokens,t_s,blocks\n"+
		"h100,100,20,0.5,\"[1, 2]\"\n"+
		"a100,250,0,1.25,3;4\n")
	tr, err := Read(p, "", Fields{Input: "prompt_tokens", Output: "completion_tokens", Time: "t_s", TimeUnit: time.Second, Hashes: "blocks", Group: "deployment"})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Format != FormatCSV || !tr.HasGroup || !tr.HasTime || !tr.HasHashes {
		t.Fatalf("%+v", tr)
	}
	want := []Request{
		{Input: 100, Output: 20, Arrival: 500 * time.Millisecond, Hashes: []int64{1, 2}, Group: "h100"},
		{Input: 250, Output: 0, Arrival: 1250 * time.Millisecond, Hashes: []int64{3, 4}, Group: "a100"},
	}
	for i, w := range want {
		g := tr.Requests[i]
		if g.Input != w.Input || g.Output != w.Output || g.Arrival != w.Arrival || !slices.Equal(g.Hashes, w.Hashes) || g.Group != w.Group {
			t.Errorf("row %d = %+v, want %+v", i, g, w)
		}
	}
	if !strings.HasSuffix(tr.Requests[1].Src, "log.csv:3") {
		t.Errorf("src %q", tr.Requests[1].Src)
	}
}

func TestSniffsJSONLinesWithoutAnExtension(t *testing.T) {
	p := write(t, "log", "  \n{\"input_length\": 5}\n")
	tr, err := Read(p, "", Fields{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Format != FormatJSONL || tr.HasTime || tr.HasOutput || tr.Requests[0].Input != 5 {
		t.Errorf("%+v", tr)
	}
}

func TestBadInputSaysWhatAndWhere(t *testing.T) {
	for _, c := range []struct{ name, file, body, want string }{
		{"empty jsonl", "a.jsonl", "\n\n", "a.jsonl: no requests"},
		{"header only", "a.csv", "input_length\n", "a.csv: no requests"},
		{"non-numeric json", "a.jsonl", `{"input_length": 3}` + "\n" + `{"input_length": "abc"}`, `a.jsonl:2: field "input_length": want a number, got "abc"`},
		{"non-numeric csv", "a.csv", "input_length\n12\nx1\n", `a.csv:3: column "input_length": want an integer number of tokens, got "x1"`},
		{"negative", "a.csv", "input_length,output_length\n5,-2\n", `a.csv:2: column "output_length": negative length -2 tokens`},
		{"zero prompt", "a.jsonl", `{"input_length": 0}`, `a.jsonl:1: field "input_length": length 0 tokens: want at least 1`},
		{"fraction", "a.jsonl", `{"input_length": 2.5}`, `a.jsonl:1: field "input_length": want an integer number of tokens, got 2.5`},
		{"missing column", "a.csv", "tokens\n5\n", `a.csv:1: no column "input_length"`},
		{"missing field", "a.jsonl", `{"tokens": 5}`, `a.jsonl:1: no field "input_length"`},
		{"not json", "a.jsonl", "{input_length: 5}", "a.jsonl:1: not a JSON object"},
		{"some lack output", "a.jsonl", `{"input_length": 5, "output_length": 1}` + "\n" + `{"input_length": 5}`, `field "output_length" is missing (first at`},
		{"bad hashes", "a.jsonl", `{"input_length": 5, "hash_ids": [1, "x"]}`, `a.jsonl:1: field "hash_ids": want an array of integers`},
		{"negative time", "a.jsonl", `{"input_length": 5, "timestamp": -3}`, `field "timestamp": arrival time -3: want a finite time ≥ 0`},
		{"short row", "a.csv", "input_length,output_length\n5\n", "a.csv:2: wrong number of fields"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Read(write(t, c.file, c.body), "", Fields{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
}
