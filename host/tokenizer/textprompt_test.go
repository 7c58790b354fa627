package tokenizer

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestTextSpecials checks, for every tokenizer available, which special tokens a server adds to
// a text prompt (the truth: each model's tokenizer_config.json and tokenizer.json, read by
// hand) and that a chat prompt rendered with ApplyChatTemplateText and encoded as the server
// encodes a string prompt holds BOS exactly once and equals the ids of the chat request.
func TestTextSpecials(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before []int32
		source string
		bos    string // "" for no BOS in the chat prompt
	}{
		{"embedded", nil, "", ""},
		{"qwen3", nil, "", ""},
		{"llama3", nil, "", "<|begin_of_text|>"}, // the template writes BOS, the tokenizer adds none
		{"llama3_1", []int32{128000}, "tokenizer.json [post_processor]", "<|begin_of_text|>"},
		{"deepseek_v3", []int32{0}, "tokenizer_config.json [add_bos_token]", "<｜begin▁of▁sentence｜>"},
		{"gemma3", []int32{2}, "tokenizer_config.json [add_bos_token]", "<bos>"},
		{"gptoss", nil, "", ""},
		{"llama2", []int32{1}, "tokenizer_config.json [add_bos_token]", "<s>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tk *Tokenizer
			var err error
			if tc.name == "embedded" {
				tk, err = Default()
			} else {
				dir := filepath.Join(cacheDir(), tc.name)
				if _, serr := os.Stat(filepath.Join(dir, "tokenizer.json")); serr != nil {
					t.Skipf("%s not fetched: %v", tc.name, serr)
				}
				tk, err = Load(dir)
			}
			if err != nil {
				t.Fatal(err)
			}
			sp := tk.TextSpecials()
			if !slices.Equal(sp.Before, tc.before) || len(sp.After) != 0 || sp.Source != tc.source {
				t.Fatalf("TextSpecials = %+v, want before %v from %q", sp, tc.before, tc.source)
			}
			if !tk.HasChatTemplate() {
				return
			}
			msgs := []Message{{Role: "user", Content: "Hello there."}}
			chat, err := tk.ApplyChatTemplate(msgs, true)
			if err != nil {
				t.Fatal(err)
			}
			text, err := tk.ApplyChatTemplateText(msgs, true)
			if err != nil {
				t.Fatal(err)
			}
			server := append(append(slices.Clone(sp.Before), tk.Encode(text)...), sp.After...)
			if !slices.Equal(server, tk.Encode(chat)) {
				t.Errorf("the server's ids of the text prompt %q differ from the chat prompt's ids", text)
			}
			if tc.bos == "" {
				return
			}
			_, bosID, _ := tk.SpecialToken("bos_token")
			if n := strings.Count(tk.Decode(server, false), tc.bos); n != 1 || server[0] != bosID {
				t.Errorf("the server sees BOS %q %d times (first id %d), want once at the start", tc.bos, n, server[0])
			}
		})
	}
}
