package tokenizer

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// tinyJSON is a small SentencePiece-style BPE tokenizer.json: vocabulary ids are written
// next to each token, merges in rank order.
//
//	ids: <unk>=0 <s>=1 </s>=2 <0x41>=3 ("A") <0xE2>=4 <0x82>=5 <0xAC>=6 ("€" = E2 82 AC)
//	     a=7 b=8 c=9 ▁=10 ab=11 bc=12 abc=13 ▁a=14 ▁abc=15; added: <tag>=16 (special)
//	     [x]=17 (lstrip+rstrip, not special), word=18 (single_word)
//	merges (rank): a b (0), ▁ a (1), ab c (2), ▁a bc (3), b c (4), ▁ abc (5)
const tinyJSON = `{
 "version": "1.0",
 "added_tokens": [
  {"id": 16, "content": "<tag>", "special": true, "normalized": false, "lstrip": false, "rstrip": false, "single_word": false},
  {"id": 17, "content": "[x]", "special": false, "normalized": false, "lstrip": true, "rstrip": true, "single_word": false},
  {"id": 18, "content": "word", "special": false, "normalized": true, "lstrip": false, "rstrip": false, "single_word": true}
 ],
 "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"}, {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
 "pre_tokenizer": null,
 "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}}],
   "pair": [], "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}, "</s>": {"id": "</s>", "ids": [2], "tokens": ["</s>"]}}},
 "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "}, {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
 "model": {"type": "BPE", "dropout": null, "unk_token": "<unk>", "continuing_subword_prefix": null, "end_of_word_suffix": null,
   "fuse_unk": true, "byte_fallback": true, "ignore_merges": false,
   "vocab": {"<unk>": 0, "<s>": 1, "</s>": 2, "<0x41>": 3, "<0xE2>": 4, "<0x82>": 5, "<0xAC>": 6, "a": 7, "b": 8, "c": 9, "▁": 10,
     "ab": 11, "bc": 12, "abc": 13, "▁a": 14, "▁abc": 15, "\u003ctag\u003e": 16},
   "merges": [["a", "b"], "▁ a", ["ab", "c"], ["▁a", "bc"], ["b", "c"], ["▁", "abc"]]}
}`

func writeTiny(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestTinyBPE(t *testing.T) {
	tk, err := Load(writeTiny(t, map[string]string{"tokenizer.json": tinyJSON}))
	if err != nil {
		t.Fatal(err)
	}
	if got := tk.VocabSize(); got != 19 {
		t.Fatalf("VocabSize = %d, want 19 (ids 0..18)", got)
	}
	cases := []struct {
		text string
		want []int32
		why  string
	}{
		// "▁abc": ranks a+b (0) then ▁+a? no: ▁a needs ▁,a adjacent; after a+b the pairs are
		// (▁,ab) none and (ab,c) rank 2 -> ▁ abc, then (▁,abc) rank 5 -> ▁abc
		{"abc", []int32{15}, "merges by rank: (a,b)=0, (ab,c)=2, (▁,abc)=5"},
		// "▁bc": (b,c)=4 -> ▁ bc; no (▁,bc) merge
		{"bc", []int32{10, 12}, "(b,c) rank 4, nothing merges ▁ with bc"},
		// "▁A": A is not in the vocabulary but <0x41> is -> byte fallback
		{"A", []int32{10, 3}, "byte fallback for A"},
		// "▁€": three byte tokens
		{"€", []int32{10, 4, 5, 6}, "byte fallback, 3 UTF-8 bytes"},
		// "▁ab": (a,b)=0 before (▁,a)=1
		{"ab", []int32{10, 11}, "lower rank wins: (a,b)=0 beats (▁,a)=1"},
		// "▁é": é has no token and no <0xC3> byte token -> unk
		{"é", []int32{10, 0}, "unk when byte fallback lacks a byte"},
		// added tokens are cut from the raw text before normalization: "x<tag>y" -> "▁x"?
		// x is unknown (no byte tokens for x) -> unk; pieces normalize separately.
		{"a<tag>b", []int32{14, 16, 10, 8}, "special token in text; each side normalized alone"},
		// [x] strips the spaces on both sides: "a  [x]  b" -> "a", [x], "b"
		{"a  [x]  b", []int32{14, 17, 10, 8}, "lstrip/rstrip consume surrounding spaces"},
		// single_word: "word" inside "awordb" is not a word -> plain BPE (w,o,r,d unknown -> one fused unk)
		{"a word", []int32{14, 10, 18}, "single_word matches a standalone word (after normalization ▁a▁word)"},
	}
	for _, c := range cases {
		if got := tk.Encode(c.text); !slices.Equal(got, c.want) {
			t.Errorf("Encode(%q) = %v, want %v (%s)", c.text, got, c.want, c.why)
		}
	}
	// post-processor: <s> ... </s>
	if got, want := tk.EncodeSpecial("abc", true), []int32{1, 15, 2}; !slices.Equal(got, want) {
		t.Errorf("EncodeSpecial(abc, true) = %v, want %v", got, want)
	}
	// decode: Replace ▁->" ", bytes E2 82 AC -> "€", Fuse, Strip one leading space
	if got, want := tk.Decode([]int32{15, 10, 4, 5, 6, 16}, false), "abc €<tag>"; got != want {
		t.Errorf("Decode = %q, want %q", got, want)
	}
	if got, want := tk.Decode([]int32{15, 16, 99, -1}, true), "abc"; got != want {
		t.Errorf("Decode(skip special, bad ids) = %q, want %q", got, want)
	}
	// invalid byte run: E2 82 then "a" -> one U+FFFD per byte (ByteFallback), then "a"
	if got, want := tk.Decode([]int32{4, 5, 7}, false), "\uFFFD\uFFFDa"; got != want {
		t.Errorf("Decode(broken UTF-8) = %q, want %q", got, want)
	}
	if !tk.IsSpecial(16) || tk.IsSpecial(17) {
		t.Errorf("IsSpecial(16, 17) = %v, %v; want true, false", tk.IsSpecial(16), tk.IsSpecial(17))
	}
	if s, ok := tk.Token(15); !ok || s != "▁abc" {
		t.Errorf("Token(15) = %q, %v", s, ok)
	}
}

func TestLoadErrors(t *testing.T) {
	replace := func(old, new string) string {
		if !strings.Contains(tinyJSON, old) {
			t.Fatalf("tinyJSON lacks %q", old)
		}
		return strings.Replace(tinyJSON, old, new, 1)
	}
	cases := []struct {
		name  string
		files map[string]string
		path  string // relative to the dir; "" = the dir
		want  string // substring of the error
		unsup *UnsupportedError
	}{
		{name: "missing dir", path: "nope", want: "no such file"},
		{name: "no tokenizer.json", files: map[string]string{"config.json": "{}"}, want: "tokenizer.json: no such file"},
		{name: "truncated", files: map[string]string{"tokenizer.json": tinyJSON[:400]}, want: "tokenizer.json: json line"},
		{name: "not an object", files: map[string]string{"tokenizer.json": "[1]"}, want: "want a JSON object"},
		{name: "wordpiece", files: map[string]string{"tokenizer.json": replace(`"type": "BPE"`, `"type": "WordPiece"`)},
			unsup: &UnsupportedError{Component: "model", Type: "WordPiece"}},
		{name: "whitespace", files: map[string]string{"tokenizer.json": replace(`"pre_tokenizer": null`, `"pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "Digits"}, {"type": "Whitespace"}]}`)},
			unsup: &UnsupportedError{Component: "pre_tokenizer.pretokenizers[1]", Type: "Whitespace"}},
		{name: "precompiled", files: map[string]string{"tokenizer.json": replace(`{"type": "Prepend", "prepend": "▁"}`, `{"type": "Precompiled"}`)},
			unsup: &UnsupportedError{Component: "normalizer.normalizers[0]", Type: "Precompiled"}},
		{name: "decoder", files: map[string]string{"tokenizer.json": replace(`{"type": "Fuse"}`, `{"type": "CTC"}`)},
			unsup: &UnsupportedError{Component: "decoder.decoders[2]", Type: "CTC"}},
		{name: "dropout", files: map[string]string{"tokenizer.json": replace(`"dropout": null`, `"dropout": 0.1`)},
			unsup: &UnsupportedError{Component: "model", Type: "BPE"}},
		{name: "merge not in vocab", files: map[string]string{"tokenizer.json": replace(`["b", "c"]`, `["b", "zz"]`)},
			want: `[merges][4] "b" "zz": token not in the vocabulary`},
		{name: "bad regex", files: map[string]string{"tokenizer.json": replace(`"pre_tokenizer": null`, `"pre_tokenizer": {"type": "Split", "pattern": {"Regex": "(a"}, "behavior": "Isolated"}`)},
			want: `[pre_tokenizer] Split regex "(a"`},
		{name: "bad config", files: map[string]string{"tokenizer.json": tinyJSON, "tokenizer_config.json": "{"}, want: "tokenizer_config.json: invalid JSON"},
		{name: "bad model config", files: map[string]string{"tokenizer.json": tinyJSON, "config.json": "nope"}, want: "config.json: invalid JSON"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := writeTiny(t, c.files)
			_, err := Load(filepath.Join(dir, c.path))
			if err == nil {
				t.Fatal("Load succeeded")
			}
			if c.unsup != nil {
				var ue *UnsupportedError
				if !errors.As(err, &ue) || ue.Component != c.unsup.Component || ue.Type != c.unsup.Type {
					t.Fatalf("error %v, want UnsupportedError{%s %s}", err, c.unsup.Component, c.unsup.Type)
				}
				if !strings.Contains(err.Error(), filepath.Join(dir, "tokenizer.json")) {
					t.Fatalf("error %q does not name the file", err)
				}
				return
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestModelMaxLen(t *testing.T) {
	cases := []struct {
		name, config, tokConfig string
		want                    int
		src                     string
	}{
		{"config first key", `{"max_position_embeddings": 40960, "seq_length": 8192}`, `{"model_max_length": 131072}`, 40960, "config.json [max_position_embeddings]"},
		{"config other key", `{"n_positions": 1024}`, "", 1024, "config.json [n_positions]"},
		{"text_config", `{"text_config": {"max_position_embeddings": 131072}}`, "", 131072, "config.json [text_config.max_position_embeddings]"},
		{"tokenizer_config", "", `{"model_max_length": 32768}`, 32768, "tokenizer_config.json [model_max_length]"},
		// transformers writes 1e30 (VERY_LARGE_INTEGER) when unset: ignored
		{"sentinel", "", `{"model_max_length": 1000000000000000019884624838656}`, 0, ""},
		{"none", "", "", 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files := map[string]string{"tokenizer.json": tinyJSON}
			if c.config != "" {
				files["config.json"] = c.config
			}
			if c.tokConfig != "" {
				files["tokenizer_config.json"] = c.tokConfig
			}
			tk, err := Load(filepath.Join(writeTiny(t, files), "tokenizer.json"))
			if err != nil {
				t.Fatal(err)
			}
			if n, src := tk.ModelMaxLen(); n != c.want || src != c.src {
				t.Fatalf("ModelMaxLen = %d, %q; want %d, %q", n, src, c.want, c.src)
			}
		})
	}
	tk, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	// Qwen3's tokenizer_config.json says model_max_length 131072; no config.json is embedded
	if n, src := tk.ModelMaxLen(); n != 131072 || src != "tokenizer_config.json [model_max_length]" {
		t.Fatalf("Default().ModelMaxLen = %d, %q", n, src)
	}
	if tk.Name() != DefaultName || tk.VocabSize() != 151669 {
		t.Fatalf("Default() name %q vocab %d", tk.Name(), tk.VocabSize())
	}
}

func TestChatErrors(t *testing.T) {
	tk, err := Load(writeTiny(t, map[string]string{"tokenizer.json": tinyJSON}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tk.ApplyChatTemplate(nil, true); !errors.Is(err, ErrNoChatTemplate) {
		t.Fatalf("no config: error %v, want ErrNoChatTemplate", err)
	}
	cfg := func(tmpl string) string {
		b, _ := json.Marshal(map[string]any{"chat_template": tmpl, "bos_token": map[string]any{"content": "<s>", "special": true}, "eos_token": "</s>"})
		return string(b)
	}
	cases := []struct {
		name, tmpl, want string
	}{
		// raise_exception on line 3: the error names line 3 and the message
		{"raise", "{{ bos_token }}\n{% for m in messages %}\n{% if m.role == 'tool' %}{{ raise_exception('no tools here') }}{% endif %}{% endfor %}", "line 3: render: no tools here"},
		{"parse", "{{ bos_token }}\n\n{% for m messages %}x{% endfor %}", "line 3: for loop missing 'in'"},
		{"unclosed", "line 1\n{{ messages", "line 2: unclosed {{"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tk, err := Load(writeTiny(t, map[string]string{"tokenizer.json": tinyJSON, "tokenizer_config.json": cfg(c.tmpl)}))
			if err != nil {
				t.Fatal(err)
			}
			_, err = tk.ApplyChatTemplate([]Message{{"user", "hi"}, {"tool", "x"}}, true)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "tokenizer_config.json [chat_template]") {
				t.Fatalf("error %v, want it to contain %q and the file", err, c.want)
			}
		})
	}
	// BOS from an AddedToken object, encoded once: "<s>" is id 1 of tinyJSON, but not an
	// added token there, so SpecialToken reports the content and ok=false for the id.
	tk, err = Load(writeTiny(t, map[string]string{"tokenizer.json": tinyJSON, "tokenizer_config.json": cfg("{{ bos_token }}{{ messages[0].content }}")}))
	if err != nil {
		t.Fatal(err)
	}
	if s, err := tk.ApplyChatTemplate([]Message{{"user", "abc"}}, false); err != nil || s != "<s>abc" {
		t.Fatalf("render = %q, %v", s, err)
	}
}

// TestRewriteTemplate checks the Jinja2 whitespace rules the rewrite applies where neither
// @huggingface/jinja (no raw, no "+") nor ardanlabs/jinja alone give Jinja2's output.
func TestRewriteTemplate(t *testing.T) {
	cases := []struct {
		name, tmpl, want string
	}{
		// ardanlabs/jinja v1.8.0 alone renders "A:x!" (the "{%-" strips across {{ x }}) and
		// "ab" for the next case (trim_blocks reaches past {{ 'a' }})
		{"strip stops at a tag", "A: {{ 'x' }}{%- if true %}!{% endif %}", "A: x!"},
		{"trim_blocks only after blocks", "{% if true %}{{ 'a' }}\nb{% endif %}", "a\nb"},
		{"lstrip_blocks", "x\n    {% if true %}y{% endif %}", "x\ny"},
		{"lstrip not mid-line", "x  {% if true %}y{% endif %}", "x  y"},
		{"plus disables lstrip", "x\n  {%+ if true %}y{% endif %}", "x\n  y"},
		{"plus disables trim", "{% if true +%}\ny{% endif %}", "\ny"},
		{"minus right", "{% if true -%}  \n\t y{% endif %}", "y"},
		{"comment trims", "a\n  {# c #}\nb", "a\nb"},
		{"raw", "{% raw %}{{ x }} {%- y -%}{% endraw %}!", "{{ x }} {%- y -%}!"},
		{"trailing newline dropped once", "a\n\n", "a\n"},
		{"quotes and backslashes", `"q" \n {{ "}}" }}`, `"q" \n }}`},
		{"strftime", `{{ strftime_now("%Y-%m-%d %b %A %j") }}`, "2024-07-26 Jul Friday 208"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ct, err := compileChatTemplate(c.tmpl, "test")
			if err != nil {
				t.Fatal(err)
			}
			got, err := ct.render(nil, ChatOptions{}, chatDate, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Fatalf("render %q = %q, want %q", c.tmpl, got, c.want)
			}
		})
	}
	// the options' date reaches strftime_now
	ct, _ := compileChatTemplate(`{{ strftime_now("%d %B %Y %H:%M:%S %p %I") }}`, "test")
	if got, _ := ct.render(nil, ChatOptions{}, time.Date(2025, 1, 2, 15, 4, 5, 0, time.UTC), nil); got != "02 January 2025 15:04:05 PM 03" {
		t.Fatalf("strftime = %q", got)
	}
}

// TestConcurrentEncode encodes the main corpus from 4 goroutines at once and compares with
// sequential results (the word cache is shared).
func TestConcurrentEncode(t *testing.T) {
	tk, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	texts, err := corpusOnce()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for n := range texts {
		if !strings.HasPrefix(n, "long/") && !strings.HasPrefix(n, "fuzz2/") {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	want := make([][]int32, len(names))
	for i, n := range names {
		want[i] = tk.Encode(texts[n])
	}
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for k := range names {
				i := (k*7 + g*13) % len(names)
				ids := tk.Encode(texts[names[i]])
				if !slices.Equal(ids, want[i]) {
					errs <- names[i]
					return
				}
				if tk.Decode(ids, false) == "" && len(ids) > 0 {
					errs <- "decode " + names[i]
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("concurrent encode differs: %s", e)
	}
}

// TestChatTemplateFiles checks that chat_template.jinja, then chat_template.json, override
// tokenizer_config.json's template while its special tokens stay.
func TestChatTemplateFiles(t *testing.T) {
	cfg := `{"chat_template": "config {{ bos_token }}", "bos_token": "<s>"}`
	cases := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"config only", map[string]string{"tokenizer_config.json": cfg}, "config <s>"},
		{"jinja wins", map[string]string{"tokenizer_config.json": cfg, "chat_template.jinja": "jinja {{ bos_token }}\n", "chat_template.json": `{"chat_template": "json"}`}, "jinja <s>"},
		{"json", map[string]string{"tokenizer_config.json": cfg, "chat_template.json": `{"chat_template": "json {{ messages[0].content }}"}`}, "json hi"},
		{"jinja without config", map[string]string{"chat_template.jinja": "{{ bos_token is defined }}"}, "False"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.files["tokenizer.json"] = tinyJSON
			tk, err := Load(writeTiny(t, c.files))
			if err != nil {
				t.Fatal(err)
			}
			got, err := tk.ApplyChatTemplate([]Message{{"user", "hi"}}, false)
			if err != nil || got != c.want {
				t.Fatalf("render = %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

// TestInvalidUTF8 checks that invalid input bytes become U+FFFD per maximal subpart before
// encoding: "a\xE2\x82b\xFF" is "a" + U+FFFD (E2 82 is one truncated sequence) + "b" + U+FFFD.
func TestInvalidUTF8(t *testing.T) {
	tk, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tk.Encode("a\xE2\x82b\xFF"), tk.Encode("a\uFFFDb\uFFFD"); !slices.Equal(got, want) {
		t.Fatalf("Encode(invalid) = %v, want %v", got, want)
	}
	if got, want := lossyUTF8([]byte("\xF0\x9F\x98x\xC0\xAF")), "\uFFFDx\uFFFD\uFFFD"; got != want {
		t.Fatalf("lossyUTF8 = %+q, want %+q (F0 9F 98 is one subpart; C0 and AF are two)", got, want)
	}
}
