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
		{"missing column", "a.csv", "tokens\n5\n", `a.csv:1: no column "input_length" (the prompt length; name another with --input)`},
		{"missing field", "a.jsonl", `{"tokens": 5}`, `a.jsonl:1: no field "input_length" (the prompt length; name another with --input)`},
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

// A replay needs each request's arrival time and output length: with RequireTime and
// RequireOutput a log without them is an error naming the first record and the flag, not a
// schedule of requests all at time 0.
func TestRequiredFieldsNameTheRecordAndTheFlag(t *testing.T) {
	need := Fields{RequireTime: true, RequireOutput: true}
	for _, c := range []struct{ name, file, body, want string }{
		{"no time jsonl", "a.jsonl", `{"input_length": 100, "output_length": 5}`,
			`a.jsonl:1: no field "timestamp" (the arrival time, which the schedule is made of; name another with --time, and its unit with --time-unit)`},
		{"time on the second only", "a.jsonl", `{"timestamp": 0, "input_length": 100, "output_length": 5}` + "\n\n" + `{"input_length": 100, "output_length": 5}`,
			`a.jsonl:3: no field "timestamp"`},
		{"null time", "a.jsonl", `{"timestamp": null, "input_length": 100, "output_length": 5}`, `a.jsonl:1: no field "timestamp"`},
		{"no output jsonl", "a.jsonl", `{"timestamp": 0, "input_length": 100}`,
			`a.jsonl:1: no field "output_length" (the output length, which max_tokens is set to; name another with --output)`},
		{"no time csv", "a.csv", "input_length,output_length\n100,5\n",
			`a.csv:1: no column "timestamp" (the arrival time, which the schedule is made of; name another with --time) in the header "input_length,output_length"`},
		{"no output csv", "a.csv", "timestamp,input_length\n0,100\n", `a.csv:1: no column "output_length" (the output length`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Read(write(t, c.file, c.body), "", need)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
	if _, err := Read(write(t, "a.jsonl", `{"input_length": 100, "output_length": 5}`), "", need); err == nil {
		t.Fatal("no error")
	}
	// Without the requirement the same log is read, with HasTime false.
	tr, err := Read(write(t, "a.jsonl", `{"input_length": 100, "output_length": 5}`), "", Fields{})
	if err != nil || tr.HasTime {
		t.Errorf("optional time: %v, HasTime %v", err, tr != nil && tr.HasTime)
	}
	if _, err := Read(write(t, "a.jsonl", `{"timestamp": 0, "input_length": 100}`), "", Fields{Output: "-", RequireOutput: true}); err == nil || !strings.Contains(err.Error(), "--output -: this command needs the field") {
		t.Errorf("--output - with the output required: %v", err)
	}
}

// A group field, when named, must hold a value in every record: an empty one would make a
// group called "".
func TestAnEmptyGroupIsAnError(t *testing.T) {
	for _, c := range []struct{ name, file, body, want string }{
		{"csv", "g.csv", "prompt_tokens,deployment\n100,a\n200,\n", `g.csv:3: column "deployment" (the group column --group names) is empty: every request needs a group`},
		{"jsonl string", "g.jsonl", `{"input_length": 1, "deployment": "a"}` + "\n" + `{"input_length": 2, "deployment": " "}`, `g.jsonl:2: field "deployment" (the group field --group names) is empty`},
		{"jsonl null", "g.jsonl", `{"input_length": 1, "deployment": null}`, `g.jsonl:1: field "deployment" (the group field --group names) is empty`},
		{"jsonl missing", "g.jsonl", `{"input_length": 1}`, `g.jsonl:1: no field "deployment" (the group field --group names)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Read(write(t, c.file, c.body), "", Fields{Input: "prompt_tokens", Group: "deployment"}.withInput(c.file))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

// withInput keeps the CSV case's column name and the JSON cases' default.
func (f Fields) withInput(file string) Fields {
	if strings.HasSuffix(file, ".jsonl") {
		f.Input = ""
	}
	return f
}

// A records file (genload replay's or genload run --records') is a log too: its header line
// is recognised and skipped, and its fields are prompt_tokens, max_tokens and the scheduled
// send time (a replay's) or the send time (a run's), in ms.
func TestReadsARecordsFile(t *testing.T) {
	replayRecs := `{"type":"header","schema":"genload.records/v1","source":"replay","id":"r1","started":"2026-12-01T10:00:00Z","target":"http://x"}
{"type":"request","index":0,"src":"t.jsonl:1","scheduled_ms":0,"sent_ms":0.4,"lag_ms":0.4,"prompt_tokens":6758,"max_tokens":500,"status":200,"completion_tokens":500,"chunks":[]}
{"type":"request","index":1,"src":"t.jsonl:2","scheduled_ms":1250.5,"sent_ms":1251,"lag_ms":0.5,"prompt_tokens":1200,"max_tokens":3,"status":200,"completion_tokens":3,"chunks":[]}
`
	tr, err := Read(write(t, "r1.records.jsonl", replayRecs), "", Fields{RequireTime: true, RequireOutput: true})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Records != "replay" || tr.Fields.Input != "prompt_tokens" || tr.Fields.Output != "max_tokens" || tr.Fields.Time != "scheduled_ms" || tr.HasHashes || len(tr.Requests) != 2 {
		t.Fatalf("records %q fields %+v hashes %v, %d requests", tr.Records, tr.Fields, tr.HasHashes, len(tr.Requests))
	}
	if q := tr.Requests[1]; q.Input != 1200 || q.Output != 3 || q.Arrival != 1250500*time.Microsecond || !strings.HasSuffix(q.Src, "r1.records.jsonl:3") {
		t.Errorf("request 1 = %+v", q)
	}
	// A run's records have no schedule: the send time; a field named explicitly is kept.
	runRecs := strings.Replace(strings.ReplaceAll(replayRecs, `"scheduled_ms":0,`, ""), `"source":"replay"`, `"source":"run"`, 1)
	tr, err = Read(write(t, "run.records.jsonl", runRecs), "", Fields{Output: "completion_tokens"})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Fields.Time != "sent_ms" || tr.Fields.Output != "completion_tokens" || tr.Requests[0].Arrival != 400*time.Microsecond || tr.Requests[0].Output != 500 {
		t.Errorf("run records: fields %+v, first %+v", tr.Fields, tr.Requests[0])
	}
	// A run's warmup requests (the measured prompts resent for one token) are not traffic:
	// left out, and counted.
	warm := runRecs + `{"type":"request","index":2,"cell":"L=1000,B=1","phase":"warmup","sent_ms":2000,"prompt_tokens":1200,"max_tokens":1,"status":200,"completion_tokens":1,"chunks":[]}
{"type":"request","index":3,"cell":"L=1000,B=1","phase":"measured","sent_ms":2100,"prompt_tokens":1200,"max_tokens":3,"status":200,"completion_tokens":3,"chunks":[]}
`
	tr, err = Read(write(t, "warm.records.jsonl", warm), "", Fields{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Warmups != 1 || len(tr.Requests) != 3 || tr.Requests[2].Output != 3 {
		t.Errorf("run records with a warmup: %d warmups, %d requests %+v", tr.Warmups, len(tr.Requests), tr.Requests)
	}
	// A pretty-printed JSON document (a run's results .json) is named as not a log.
	_, err = Read(write(t, "m1.json", "{\n  \"header\": {\"schema\": \"genload.run/v1\"}\n}\n"), "", Fields{})
	if err == nil || !strings.Contains(err.Error(), `m1.json:1: "{" alone: a JSON document over several lines, not JSON Lines`) {
		t.Errorf("a results .json: %v", err)
	}
	// Another schema is refused, naming it.
	_, err = Read(write(t, "x.jsonl", strings.Replace(replayRecs, "genload.records/v1", "genload.records/v9", 1)), "", Fields{})
	if err == nil || !strings.Contains(err.Error(), `x.jsonl:1: a header of schema "genload.records/v9": genload reads records files of schema "genload.records/v1"`) {
		t.Errorf("another schema: %v", err)
	}
}
