package run

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/genload/genload/host/engine"
	"github.com/genload/genload/host/internal/testplugins"
	"github.com/genload/genload/host/tokenizer"
)

// bosTokenizerDir writes a model directory whose chat template writes the BOS token as text
// ("<|endoftext|>", one special token) at its start, under a tokenizer whose encoding adds
// none (Qwen3's tokenizer.json, a byte-level post-processor): Llama 3's arrangement.
func bosTokenizerDir(t *testing.T) string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "tokenizer", "models", "qwen3", "tokenizer.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tj, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := map[string]any{
		"tokenizer_class": "Qwen2Tokenizer", "bos_token": "<|endoftext|>", "eos_token": "<|im_end|>", "model_max_length": 32768,
		"chat_template": "{{ bos_token }}{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}" +
			"{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}",
	}
	cj, _ := json.Marshal(cfg)
	for name, b := range map[string][]byte{"tokenizer.json": tj, "tokenizer_config.json": cj} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Text prompts for a server that adds its own BOS (quirk add-bos) under a chat template that
// writes one: the templating probe sees one token more than the local count, the measured
// requests carry no BOS text of their own (the server's BOS takes its place), and the
// server's usage.prompt_tokens of every request is its planned length.
func TestTextPromptsServerBOS(t *testing.T) {
	t.Setenv(testplugins.EnvPluginDir, testplugins.Dir(t))
	dir := bosTokenizerDir(t)
	tok, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	const bos = "<|endoftext|>"
	if got := tok.TemplateBOS(); got != bos {
		t.Fatalf("TemplateBOS %q, want %q: the test's template must write the BOS", got, bos)
	}
	ecfg := engine.DefaultConfig()
	ecfg.TimeScale = 0.05
	ecfg.VocabSize = max(ecfg.VocabSize, tok.VocabSize())
	if ecfg.Quirks, err = engine.ParseQuirks("add-bos"); err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(ecfg, tok)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	type sent struct {
		prompts   []string
		maxTokens int
	}
	var mu sync.Mutex
	var bodies []sent
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/completions" {
			b, _ := io.ReadAll(r.Body)
			var v struct {
				Prompt    json.RawMessage `json:"prompt"`
				MaxTokens int             `json:"max_tokens"`
			}
			if err := json.Unmarshal(b, &v); err != nil {
				t.Errorf("body %s: %v", b, err)
			}
			s := sent{maxTokens: v.MaxTokens}
			if json.Unmarshal(v.Prompt, &s.prompts) != nil {
				var one string
				json.Unmarshal(v.Prompt, &one)
				s.prompts = []string{one}
			}
			mu.Lock()
			bodies = append(bodies, s)
			mu.Unlock()
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
		eng.Handler().ServeHTTP(w, r)
	}))
	defer srv.Close()
	const maxTokens = 6
	cfg := probeCfg(t, fmt.Sprintf("target = %q\nmax_tokens = %d\nmetrics = \"off\"\nout = %q\n[prompt]\nformat = \"text\"\n[tokenizer]\npath = %q\n[matrix]\nseq_lens = [300, 1200]\nbatch_sizes = [1, 3]\n",
		srv.URL, maxTokens, t.TempDir(), dir))
	var stderr bytes.Buffer
	res, err := Run(context.Background(), cfg, Options{Stderr: &stderr, RunID: "bos"})
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), fmt.Sprintf("the chat template's own %q is not sent", bos)) {
		t.Errorf("no line saying the BOS text is left out:\n%s", stderr.String())
	}
	measured, withBOS := 0, 0
	for _, b := range bodies {
		for _, p := range b.prompts {
			if strings.Contains(p, bos) {
				withBOS++
			}
			if b.maxTokens == maxTokens {
				measured++
				if !strings.HasPrefix(p, "<|im_start|>user\n") {
					t.Errorf("a measured prompt does not start with the template's user turn: %.60q", p)
				}
			}
			if strings.Contains(p, bos) && b.maxTokens != 1 {
				t.Errorf("a request with max_tokens %d sends the BOS text: %.60q", b.maxTokens, p)
			}
		}
	}
	if measured != 2*(1+3) || withBOS != 2 {
		t.Errorf("%d measured prompts (want 8), %d with the BOS text (want the templating probe's 2)", measured, withBOS)
	}
	for _, c := range res.Run.Cells {
		f := c.Figures
		if f == nil || f.Prompts == nil {
			t.Fatalf("%s: %s %s: no prompt check", c.Cell.Key(), c.Status, c.Error)
		}
		planned := 0
		for _, n := range c.Lengths.Each {
			planned += n
		}
		if f.Prompts.Requests != 1 || f.Prompts.Deviating != 0 || f.PromptTokens != planned || c.PromptTokenDeviation != 0 {
			t.Errorf("%s: the server counted %d prompt tokens, planned %d (check %+v)", c.Cell.Key(), f.PromptTokens, planned, f.Prompts)
		}
	}
}
