package engine

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/genload/genload/host/internal/logtest"
)

// ollamaObject is one line of /api/generate's stream.
type ollamaObject struct {
	Model              string  `json:"model"`
	CreatedAt          string  `json:"created_at"`
	Response           *string `json:"response"`
	Done               bool    `json:"done"`
	DoneReason         string  `json:"done_reason"`
	TotalDuration      int64   `json:"total_duration"`
	PromptEvalCount    int     `json:"prompt_eval_count"`
	PromptEvalDuration int64   `json:"prompt_eval_duration"`
	EvalCount          int     `json:"eval_count"`
	EvalDuration       int64   `json:"eval_duration"`
	Error              string  `json:"error"`
}

func ndjson(t *testing.T, body []byte) []ollamaObject {
	t.Helper()
	var out []ollamaObject
	for _, l := range strings.Split(strings.TrimRight(string(body), "\n"), "\n") {
		var o ollamaObject
		if err := json.Unmarshal([]byte(l), &o); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		out = append(out, o)
	}
	return out
}

// The ollama dialect's native API: /api/version, and /api/generate streamed as one JSON
// object per line of 1–3 tokens each, the final object's eval_count the tokens generated and
// eval_duration the engine's own time from the first token's step to the last's (its
// sequence log), prompt_eval_count the prompt's tokens — the model's template around them
// without "raw".
func TestOllamaNative(t *testing.T) {
	log := &logtest.LockedBuffer{}
	e, u := quirkEngine(t, "", func(c *Config) {
		c.Dialect, c.EOSProbability, c.TimeScale, c.SeqLog = DialectOllama, 0, 0.05, log
	})
	resp, err := http.Get(u + "/api/version")
	if err != nil {
		t.Fatal(err)
	}
	var v struct{ Version string }
	json.NewDecoder(resp.Body).Decode(&v)
	resp.Body.Close()
	if resp.StatusCode != 200 || v.Version != ollamaVersion {
		t.Errorf("/api/version: %d %q", resp.StatusCode, v.Version)
	}
	model := e.Config().ModelName
	resp, b := post(t, u+"/api/generate", `{"model":"`+model+`","prompt":"the river and the stone","raw":true,"options":{"num_predict":40,"temperature":0,"seed":3}}`)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("status %d, %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	objs := ndjson(t, b)
	last := objs[len(objs)-1]
	text := 0
	for _, o := range objs[:len(objs)-1] {
		if o.Done || o.Response == nil || o.Model != model || o.CreatedAt == "" {
			t.Errorf("content object %+v", o)
		}
		text += len(*o.Response)
	}
	if n := len(objs) - 1; float64(40)/float64(n) < 1.05 || float64(40)/float64(n) > 1.5 || text == 0 {
		t.Errorf("%d content objects for 40 tokens, %d bytes of text", n, text)
	}
	if !last.Done || last.DoneReason != "length" || last.EvalCount != 40 || *last.Response != "" {
		t.Errorf("final object %+v", last)
	}
	lines := logtest.Lines(log.String())
	if len(lines) != 1 {
		t.Fatalf("sequence log:\n%s", log.String())
	}
	f := lines[0]
	if last.PromptEvalCount != f.Int(t, "prompt") || last.PromptEvalCount != len(e.tok.Encode("the river and the stone")) {
		t.Errorf("prompt_eval_count %d, the engine's prompt %d", last.PromptEvalCount, f.Int(t, "prompt"))
	}
	truth := (f.Float(t, "last_ms") - f.Float(t, "first_ms")) * 1e6
	if d := float64(last.EvalDuration) - truth; d < -1000 || d > 1000 || last.EvalDuration <= 0 {
		t.Errorf("eval_duration %d ns, the engine's first-to-last %.0f ns", last.EvalDuration, truth)
	}
	if last.TotalDuration < last.EvalDuration+last.PromptEvalDuration || last.PromptEvalDuration <= 0 {
		t.Errorf("durations %+v", last)
	}
	// without raw, the model's template wraps the prompt
	_, b = post(t, u+"/api/generate", `{"model":"`+model+`","prompt":"the river and the stone","options":{"num_predict":2}}`)
	if o := ndjson(t, b); o[len(o)-1].PromptEvalCount <= last.PromptEvalCount {
		t.Errorf("templated prompt_eval_count %d, raw %d", o[len(o)-1].PromptEvalCount, last.PromptEvalCount)
	}
	// stream false: one object with the whole text
	_, b = post(t, u+"/api/generate", `{"model":"`+model+`","prompt":"the river","raw":true,"stream":false,"options":{"num_predict":5}}`)
	if o := ndjson(t, b); len(o) != 1 || !o[0].Done || o[0].EvalCount != 5 || *o[0].Response == "" {
		t.Errorf("stream false: %s", b)
	}
	if resp, b := post(t, u+"/api/generate", `{"model":"other","prompt":"hi"}`); resp.StatusCode != 404 || !strings.Contains(string(b), `"error":"model 'other' not found"`) {
		t.Errorf("unknown model: %d %s", resp.StatusCode, b)
	}
	if resp, b := post(t, u+"/api/generate", `{"model":"`+model+`","prompt":"hi"}`, "X-Genload-Fault-Status", "503"); resp.StatusCode != 503 || !strings.HasPrefix(string(b), `{"error":`) {
		t.Errorf("fault 503: %d %s", resp.StatusCode, b)
	}
}

// The native API is the ollama dialect's alone, and no-native-api hides it.
func TestOllamaNativeAbsent(t *testing.T) {
	for _, c := range []struct{ quirks, dialect string }{{"no-native-api", DialectOllama}, {"", DialectVLLM}} {
		_, u := quirkEngine(t, c.quirks, func(cfg *Config) { cfg.Dialect = c.dialect })
		resp, err := http.Get(u + "/api/version")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if r2, _ := post(t, u+"/api/generate", `{"model":"x","prompt":"hi"}`); resp.StatusCode != 404 || r2.StatusCode != 404 {
			t.Errorf("%s %s: /api/version %d, /api/generate %d, want 404", c.dialect, c.quirks, resp.StatusCode, r2.StatusCode)
		}
	}
}
