package engine

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestParsePromptForms(t *testing.T) {
	cases := []struct {
		name    string
		body    string
		ids     [][]int32
		texts   []string
		wantErr bool
	}{
		{"string", `{"prompt":"a\"b\u00e9"}`, nil, []string{"a\"bé"}, false},
		{"strings", ` { "prompt" : [ "x" , "y" ] , "n" : 2 } `, nil, []string{"x", "y"}, false},
		{"ids", `{"prompt":[1, 2 ,3]}`, [][]int32{{1, 2, 3}}, nil, false},
		{"id lists", `{"prompt":[[1],[2,3]],"max_tokens":4}`, [][]int32{{1}, {2, 3}}, nil, false},
		{"negative id", `{"prompt":[-5]}`, [][]int32{{-5}}, nil, false},
		{"fractional id", `{"prompt":[1.5]}`, nil, nil, true},
		{"integral float ids", `{"prompt":[2.0,0E0,-3e1]}`, [][]int32{{2, 0, -30}}, nil, false},
		// fuzz crashers (testdata/fuzz/FuzzParseCompletion)
		{"crasher: exponent zero id", `{"prompt":[0E0]}`, [][]int32{{0}}, nil, false},
		{"crasher: invalid UTF-8 key", "{\"\xae\":0,\"prompt\":[0]}", [][]int32{{0}}, nil, false},
		{"leading zero", `{"prompt":[01.0]}`, nil, nil, true},
		{"id overflow", `{"prompt":[4294967296]}`, nil, nil, true},
		{"trailing comma", `{"prompt":[1,]}`, nil, nil, true},
		{"garbage after", `{"prompt":[1]} x`, nil, nil, true},
		{"bad other field", `{"prompt":[1],"n":"two"}`, nil, nil, true},
		{"unterminated", `{"prompt":[1,2`, nil, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := parseCompletion([]byte(tc.body))
			if tc.wantErr {
				if err == nil {
					t.Fatalf("no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(req.prompts, tc.ids) || !reflect.DeepEqual(req.texts, tc.texts) {
				t.Errorf("got ids %v texts %q", req.prompts, req.texts)
			}
		})
	}
}

// FuzzParseCompletion checks the hand-written scanner against encoding/json: whenever
// encoding/json accepts a body with an id-list prompt, the scanner accepts it and agrees.
func FuzzParseCompletion(f *testing.F) {
	for _, s := range []string{`{"prompt":[1,2,3]}`, `{"prompt":[[1],[2,3]],"n":2}`, `{"prompt":"hi","stream":true}`,
		`{"prompt":["a","b"],"stream_options":{"include_usage":true}}`, ` {"max_tokens":5, "prompt":[ 7 ]} `,
		`{"pRompt":[0]}`} { // a key that differs from "prompt" only in case is not the prompt
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := parseCompletion(body)
		// the oracle reads "prompt" by its exact name, as the engine and real servers do
		// (encoding/json would also take "pRompt" into a struct field tagged prompt)
		var members map[string]json.RawMessage
		if json.Unmarshal(body, &members) != nil {
			return // the scanner may accept or reject invalid JSON; it must not panic
		}
		var ref struct{ Prompt any }
		if raw, ok := members["prompt"]; !ok || json.Unmarshal(raw, &ref.Prompt) != nil {
			return
		}
		var fields restFields
		if json.Unmarshal(body, &fields) != nil {
			return
		}
		switch p := ref.Prompt.(type) {
		case string:
			if err != nil {
				t.Fatalf("string prompt %q rejected: %v", p, err)
			}
			if len(req.texts) != 1 || req.texts[0] != p {
				t.Fatalf("string prompt: texts %q, want %q", req.texts, p)
			}
		case []any:
			if len(p) == 0 {
				return
			}
			want, ok := idLists(p)
			if !ok {
				return
			}
			if err != nil {
				t.Fatalf("id prompt %v rejected: %v", want, err)
			}
			if !reflect.DeepEqual(req.prompts, want) {
				t.Fatalf("id prompt: got %v, want %v", req.prompts, want)
			}
		}
	})
}

// idLists converts a decoded [ids] or [[ids]] prompt, reporting false for other shapes or
// non-int32 values.
func idLists(p []any) ([][]int32, bool) {
	conv := func(xs []any) ([]int32, bool) {
		out := make([]int32, 0, len(xs))
		for _, x := range xs {
			f, ok := x.(float64)
			if !ok || f != float64(int32(f)) {
				return nil, false
			}
			out = append(out, int32(f))
		}
		return out, true
	}
	if _, nested := p[0].([]any); nested {
		var out [][]int32
		for _, x := range p {
			xs, ok := x.([]any)
			if !ok {
				return nil, false
			}
			ids, ok := conv(xs)
			if !ok {
				return nil, false
			}
			out = append(out, ids)
		}
		return out, true
	}
	ids, ok := conv(p)
	return [][]int32{ids}, ok
}
