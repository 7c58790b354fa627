package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/genload/genload/host/engine"
	"github.com/genload/genload/host/tokenizer"
)

// shapeServer is a completions server that accepts only some prompt shapes, answering the
// others as the named server does, and streams max_tokens tokens per prompt with or without
// usage.
type shapeServer struct {
	accept     map[Shape]bool
	reject     string // the 400 message for other shapes
	usage      bool   // a final usage chunk
	continuous bool   // usage on every chunk
	tokenize   string // "" (404), "prompt", "content" or "inputs": the /tokenize dialect
	metrics    bool
}

func shapeOf(raw json.RawMessage) Shape {
	var lists [][]int
	var ids []int
	var strs []string
	switch {
	case json.Unmarshal(raw, &lists) == nil:
		return ShapeIDLists
	case json.Unmarshal(raw, &ids) == nil:
		return ShapeIDs
	case json.Unmarshal(raw, &strs) == nil:
		return ShapeStrings
	}
	return ShapeString
}

func (s *shapeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	switch r.URL.Path {
	case "/metrics":
		if !s.metrics {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, "# TYPE x counter\nx 1\n")
		return
	case "/tokenize":
		var in map[string]any
		json.Unmarshal(body, &in)
		text, ok := in[s.tokenize].(string)
		switch {
		case s.tokenize == "" || !ok && s.tokenize != "content":
			w.WriteHeader(422)
			io.WriteString(w, `{"error":"missing field"}`)
		case s.tokenize == "prompt":
			fmt.Fprintf(w, `{"count":%d,"max_model_len":4096,"tokens":[]}`, len(strings.Fields(text)))
		case s.tokenize == "content": // llama.cpp: no "content" → no tokens; BOS only with add_special
			n := len(strings.Fields(text))
			if in["add_special"] == true && n > 0 {
				n++
			}
			fmt.Fprintf(w, `{"tokens":[%s]}`, strings.TrimSuffix(strings.Repeat("1,", n), ","))
		case s.tokenize == "inputs":
			n := len(strings.Fields(text))
			fmt.Fprintf(w, "[%s]", strings.TrimSuffix(strings.Repeat(`{"id":1,"text":"a","start":0,"stop":1},`, n), ","))
		}
		return
	}
	var req struct {
		Prompt    json.RawMessage `json:"prompt"`
		MaxTokens int             `json:"max_tokens"`
	}
	json.Unmarshal(body, &req)
	sh := shapeOf(req.Prompt)
	if !s.accept[sh] {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(400)
		fmt.Fprintf(w, `{"error":{"message":%q,"type":"invalid_request_error"}}`, s.reject)
		return
	}
	n := 1
	if sh == ShapeIDLists || sh == ShapeStrings {
		var many []json.RawMessage
		json.Unmarshal(req.Prompt, &many)
		n = len(many)
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for tok := 1; tok <= req.MaxTokens; tok++ {
		for c := range n {
			fin := "null"
			if tok == req.MaxTokens {
				fin = `"length"`
			}
			u := ""
			if s.continuous && n == 1 {
				u = fmt.Sprintf(`,"usage":{"prompt_tokens":3,"completion_tokens":%d,"total_tokens":%d}`, tok, 3+tok)
			}
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":%d,\"text\":\" t\",\"finish_reason\":%s}]%s}\n\n", c, fin, u)
		}
	}
	if s.usage {
		fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\n", n*req.MaxTokens, 3+n*req.MaxTokens)
	}
	io.WriteString(w, "data: [DONE]\n\n")
}

const goStringOnly = "json: cannot unmarshal array into Go struct field CompletionRequest.prompt of type string"

var probeIDs, probeTexts = [][]int32{{9707, 11}, {785, 12884}}, []string{"Hello there", "The sky"}

// Each shape is sent as the server sees it, accepted or rejected with its message and the
// setting to change; usage is told apart: none, final only, on every chunk.
func TestProbeShapes(t *testing.T) {
	s := &shapeServer{accept: map[Shape]bool{ShapeString: true}, reject: goStringOnly, usage: true}
	srv := httptest.NewServer(s)
	defer srv.Close()
	c, _ := New(Options{Target: srv.URL, Retries: 3})
	defer c.Close()
	rs, err := c.ProbeShapes(context.Background(), Shapes, probeIDs, probeTexts)
	if err != nil {
		t.Fatal(err)
	}
	want := map[Shape]string{
		ShapeIDLists: `status 400: ` + goStringOnly + ` ([mode] = "array" / [prompt.format] = "tokens" rejected: the server accepts only a single string prompt: set mode = "routed" and prompt.format = "text" (or "auto"))`,
		ShapeIDs:     `status 400: ` + goStringOnly + ` ([prompt.format] = "tokens" rejected: the server accepts only a single string prompt: set prompt.format = "text" (or "auto"))`,
		ShapeStrings: `status 400: ` + goStringOnly + ` ([mode] = "array" rejected: the server accepts only a single string prompt: set mode = "routed" (or "auto"))`,
	}
	for i, r := range rs {
		if r.Shape != Shapes[i] {
			t.Fatalf("result %d is %s, want %s", i, r.Shape, Shapes[i])
		}
		if r.Shape == ShapeString {
			if !r.Accepted || r.Err != nil || !r.Usage || r.ContinuousUsage {
				t.Errorf("string: %+v, want accepted with final usage only", r)
			}
			continue
		}
		if w := "POST " + srv.URL + "/v1/completions: " + want[r.Shape]; r.Accepted || r.Error != w {
			t.Errorf("%s: accepted %v, error\n got %q\nwant %q", r.Shape, r.Accepted, r.Error, w)
		}
	}
	// usage on every chunk; none at all
	s.accept = map[Shape]bool{ShapeIDs: true}
	s.continuous, s.usage = true, false
	rs, _ = c.ProbeShapes(context.Background(), []Shape{ShapeIDs}, probeIDs, probeTexts)
	if !rs[0].Accepted || !rs[0].Usage || !rs[0].ContinuousUsage {
		t.Errorf("continuous: %+v", rs[0])
	}
	s.continuous = false
	rs, _ = c.ProbeShapes(context.Background(), []Shape{ShapeIDs}, probeIDs, probeTexts)
	if !rs[0].Accepted || rs[0].Usage || rs[0].ContinuousUsage {
		t.Errorf("no usage: %+v", rs[0])
	}
}

// The tokenize endpoint is found in each server's own shape, and counts as the server
// tokenizes a completion prompt (llama.cpp: with add_special, so BOS is counted).
func TestProbeTokenizeDialects(t *testing.T) {
	for _, d := range []struct {
		dialect string
		want    int // "one two three"
	}{{"prompt", 3}, {"content", 4}, {"inputs", 3}} {
		t.Run(d.dialect, func(t *testing.T) {
			srv := httptest.NewServer(&shapeServer{tokenize: d.dialect})
			defer srv.Close()
			tc, err := ProbeTokenize(context.Background(), srv.URL, "", "one two three", 0)
			if err != nil {
				t.Fatal(err)
			}
			if tc.Dialect != d.dialect || tc.URL != srv.URL+"/tokenize" {
				t.Fatalf("found %s at %s", tc.Dialect, tc.URL)
			}
			if n, err := tc.Count(context.Background(), "one two three"); err != nil || n != d.want {
				t.Fatalf("Count = %d, %v; want %d", n, err, d.want)
			}
		})
	}
	srv := httptest.NewServer(&shapeServer{})
	defer srv.Close()
	_, err := ProbeTokenize(context.Background(), srv.URL, "", "one", 0)
	want := "no tokenize endpoint: prompt: POST " + srv.URL + "/tokenize: status 422: missing field; content: POST " + srv.URL +
		"/tokenize: status 422: missing field; inputs: POST " + srv.URL + "/tokenize: status 422: missing field"
	if err == nil || err.Error() != want {
		t.Fatalf("err\n got %v\nwant %s", err, want)
	}
}

// Against the built-in engine: every shape is accepted, usage comes on every chunk with
// continuous_usage, /metrics answers, and /tokenize counts what the run's tokenizer does.
func TestProbeBuiltinEngine(t *testing.T) {
	tok, err := tokenizer.Default()
	if err != nil {
		t.Fatal(err)
	}
	cfg := engine.DefaultConfig()
	cfg.TimeScale = 0.001
	cfg.VocabSize = max(cfg.VocabSize, tok.VocabSize())
	eng, err := engine.New(cfg, tok)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	url, err := eng.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c, _ := New(Options{Target: url, ContinuousUsage: true})
	defer c.Close()
	texts := []string{"Hello, how are you today?", "The sky is blue because"}
	ids := [][]int32{tok.Encode(texts[0]), tok.Encode(texts[1])}
	caps, err := c.Probe(context.Background(), Shapes, ids, texts, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range caps.Shapes {
		if !r.Accepted || !r.Usage || !r.ContinuousUsage {
			t.Errorf("%s: %+v", r.Shape, r)
		}
	}
	if !caps.Metrics || caps.Tokenize == nil || caps.Tokenize.Dialect != "prompt" {
		t.Fatalf("metrics %v (%s), tokenize %+v (%s)", caps.Metrics, caps.MetricsError, caps.Tokenize, caps.TokenizeError)
	}
	const text = "Summarize and analyse the text above."
	if n, err := caps.Tokenize.Count(context.Background(), text); err != nil || n != len(tok.Encode(text)) {
		t.Fatalf("Count = %d, %v; the tokenizer gives %d", n, err, len(tok.Encode(text)))
	}
}
