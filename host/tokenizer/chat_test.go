package tokenizer

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// chatGolden is testdata/chat_golden.json, written by oracle/chat_oracle.mjs with
// @huggingface/jinja@0.5.11.
type chatGolden struct {
	Cases map[string]struct {
		Messages            []Message      `json:"messages"`
		AddGenerationPrompt bool           `json:"add_generation_prompt"`
		EnableThinking      *bool          `json:"enable_thinking"`
		Extra               map[string]any `json:"-"`
	} `json:"cases"`
	Tokenizers map[string]map[string]json.RawMessage `json:"tokenizers"`
	Templates  map[string]map[string]json.RawMessage `json:"templates"`
	Ardanlabs  map[string]map[string]json.RawMessage `json:"ardanlabs_templates"`
}

func readChatGolden(t *testing.T) chatGolden {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "chat_golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g chatGolden
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	return g
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// checkRenders renders every golden case with render and compares byte for byte; a golden
// that is an object (the reference raised an error) expects an error.
func checkRenders(t *testing.T, g chatGolden, want map[string]json.RawMessage, render func(msgs []Message, opt ChatOptions) (string, error)) {
	t.Helper()
	for _, cn := range sortedKeys(g.Cases) {
		c := g.Cases[cn]
		raw, ok := want[cn]
		if !ok {
			t.Errorf("case %s: no golden", cn)
			continue
		}
		opt := ChatOptions{AddGenerationPrompt: c.AddGenerationPrompt}
		if c.EnableThinking != nil {
			opt.Vars = map[string]any{"enable_thinking": *c.EnableThinking}
		}
		got, err := render(c.Messages, opt)
		var ws string
		if json.Unmarshal(raw, &ws) != nil {
			if err == nil {
				t.Errorf("case %s: rendered %q, reference failed: %s", cn, got, raw)
			}
			continue
		}
		if err != nil {
			t.Errorf("case %s: %v", cn, err)
			continue
		}
		if got != ws {
			t.Errorf("case %s:\n got %q\nwant %q", cn, got, ws)
		}
	}
}

// TestChatGoldenTokenizers renders the chat template of every tokenizer_config.json (Qwen3
// from the embedded files, the others from the cache) for each golden case.
func TestChatGoldenTokenizers(t *testing.T) {
	g := readChatGolden(t)
	for _, name := range sortedKeys(g.Tokenizers) {
		t.Run(name, func(t *testing.T) {
			tk := tokenizerFor(t, name)
			want := g.Tokenizers[name]
			if _, missing := want["_missing"]; missing {
				_, err := tk.ApplyChatTemplate([]Message{{"user", "Hello"}}, true)
				if !errors.Is(err, ErrNoChatTemplate) {
					t.Fatalf("ApplyChatTemplate error = %v, want ErrNoChatTemplate", err)
				}
				return
			}
			checkRenders(t, g, want, tk.RenderChat)
		})
	}
}

// TestChatGoldenTemplates renders testdata/templates/*.jinja, small templates probing
// Jinja2's whitespace control where ardanlabs/jinja alone differs.
func TestChatGoldenTemplates(t *testing.T) {
	g := readChatGolden(t)
	specials := map[string]*string{"bos_token": ptr("<BOS>"), "eos_token": ptr("<EOS>")}
	for _, f := range sortedKeys(g.Templates) {
		t.Run(f, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join("testdata", "templates", f))
			if err != nil {
				t.Fatal(err)
			}
			ct, err := compileChatTemplate(string(src), f)
			if err != nil {
				t.Fatal(err)
			}
			checkRenders(t, g, g.Templates[f], func(msgs []Message, opt ChatOptions) (string, error) {
				return ct.render(msgs, opt, chatDate, specials)
			})
		})
	}
}

// TestChatGoldenRealTemplates renders the 17 real-model chat templates of
// github.com/ardanlabs/jinja@v1.8.0's testdata (read from the Go module cache) for each case:
// byte for byte equal to @huggingface/jinja on all 85 renders (the engine alone: 72/85).
func TestChatGoldenRealTemplates(t *testing.T) {
	g := readChatGolden(t)
	mod := os.Getenv("GOMODCACHE")
	if mod == "" {
		gopath := os.Getenv("GOPATH")
		if gopath == "" {
			home, _ := os.UserHomeDir()
			gopath = filepath.Join(home, "go")
		}
		mod = filepath.Join(strings.Split(gopath, string(os.PathListSeparator))[0], "pkg", "mod")
	}
	dir := filepath.Join(mod, "github.com", "ardanlabs", "jinja@v1.8.0", "testdata", "templates")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("ardanlabs/jinja testdata not in the module cache (%v): run go mod download", err)
	}
	specials := map[string]*string{"bos_token": ptr("<BOS>"), "eos_token": ptr("<EOS>")}
	if len(g.Ardanlabs) != 17 {
		t.Fatalf("%d real templates in the goldens, want 17", len(g.Ardanlabs))
	}
	for _, f := range sortedKeys(g.Ardanlabs) {
		t.Run(f, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				t.Fatal(err)
			}
			ct, err := compileChatTemplate(string(src), f)
			if err != nil {
				t.Fatal(err)
			}
			checkRenders(t, g, g.Ardanlabs[f], func(msgs []Message, opt ChatOptions) (string, error) {
				if opt.Vars == nil {
					opt.Vars = map[string]any{}
				}
				opt.Vars["date_string"] = "26 Jul 2024"
				return ct.render(msgs, opt, chatDate, specials)
			})
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestQwen3HelloChat pins the one-message render of the embedded Qwen3 template and its ids:
// <|im_start|>=151644 user=872 \n=198 Hello=9707 <|im_end|>=151645 \n=198 assistant=77091 \n=198.
func TestQwen3HelloChat(t *testing.T) {
	tk, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	s, err := tk.ApplyChatTemplate([]Message{{Role: "user", Content: "Hello"}}, true)
	if err != nil {
		t.Fatal(err)
	}
	if want := "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n"; s != want {
		t.Fatalf("render = %q, want %q", s, want)
	}
	ids, err := tk.EncodeChat([]Message{{Role: "user", Content: "Hello"}}, true)
	if err != nil {
		t.Fatal(err)
	}
	want := []int32{151644, 872, 198, 9707, 151645, 198, 151644, 77091, 198}
	if !equalIDs(ids, want) {
		t.Fatalf("EncodeChat = %v, want %v", ids, want)
	}
}

func equalIDs(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestChatBOSOnce checks, for every tokenizer whose template writes BOS, that the encoded
// chat starts with exactly one BOS id.
func TestChatBOSOnce(t *testing.T) {
	for _, name := range goldenTokenizers {
		t.Run(name, func(t *testing.T) {
			tk := tokenizerFor(t, name)
			if !tk.HasChatTemplate() {
				t.Skip("no chat template")
			}
			bos, id, ok := tk.SpecialToken("bos_token")
			ids, err := tk.EncodeChat([]Message{{"system", "Be brief."}, {"user", "Hello"}}, true)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				t.Logf("no bos_token; %d ids", len(ids))
				return
			}
			n := 0
			for _, x := range ids {
				if x == id {
					n++
				}
			}
			s, _ := tk.ApplyChatTemplate([]Message{{"system", "Be brief."}, {"user", "Hello"}}, true)
			if strings.Contains(s, bos) && (n != 1 || ids[0] != id) {
				t.Fatalf("BOS %q (id %d) occurs %d times, ids start %v", bos, id, n, ids[:min(5, len(ids))])
			}
		})
	}
}
