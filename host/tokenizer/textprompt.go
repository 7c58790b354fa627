package tokenizer

import (
	"strings"
)

// TextSpecials are the special tokens a server's tokenizer puts around a text prompt when it
// encodes it with add_special_tokens = true, as vLLM, SGLang and TGI do for a string prompt
// of /v1/completions (llama.cpp adds BOS when the model's add_bos_token metadata says so).
type TextSpecials struct {
	Before, After []int32 // e.g. [128000] (Llama 3.1's <|begin_of_text|>) and nothing
	// Source says where the answer comes from: "tokenizer_config.json [add_bos_token]",
	// "tokenizer.json [post_processor]", or "" when neither adds anything.
	Source string
}

// llamaClasses are the tokenizer classes of transformers whose fast tokenizer rebuilds its
// post-processor from add_bos_token and add_eos_token (LlamaTokenizerFast and
// GemmaTokenizerFast call update_post_processor); for other classes, such as
// PreTrainedTokenizerFast, tokenizer.json's post_processor decides.
var llamaClasses = map[string]bool{
	"LlamaTokenizer": true, "LlamaTokenizerFast": true, "CodeLlamaTokenizer": true, "CodeLlamaTokenizerFast": true,
	"GemmaTokenizer": true, "GemmaTokenizerFast": true,
}

// TextSpecials returns the special tokens a server adds around a text prompt it encodes
// (see the type): for the Llama and Gemma tokenizer classes, BOS when tokenizer_config.json's
// add_bos_token is true and EOS when add_eos_token is (DeepSeek-V3: BOS, although its
// tokenizer.json's post-processor adds none); otherwise the single-sequence template of
// tokenizer.json's post_processor (Llama 3.1, Gemma 3: BOS; Llama 3, Qwen3, gpt-oss: none).
func (t *Tokenizer) TextSpecials() TextSpecials {
	if t.cfg != nil && llamaClasses[t.cfg.class] && (t.cfg.addBOS != nil || t.cfg.addEOS != nil) {
		var sp TextSpecials
		if t.cfg.addBOS != nil && *t.cfg.addBOS {
			if _, id, ok := t.SpecialToken("bos_token"); ok {
				sp.Before = []int32{id}
			}
		}
		if t.cfg.addEOS != nil && *t.cfg.addEOS {
			if _, id, ok := t.SpecialToken("eos_token"); ok {
				sp.After = []int32{id}
			}
		}
		if len(sp.Before)+len(sp.After) > 0 {
			sp.Source = "tokenizer_config.json [add_bos_token]"
			if len(sp.Before) == 0 {
				sp.Source = "tokenizer_config.json [add_eos_token]"
			}
		}
		return sp
	}
	if len(t.post.before)+len(t.post.after) == 0 {
		return TextSpecials{}
	}
	return TextSpecials{Before: append([]int32(nil), t.post.before...), After: append([]int32(nil), t.post.after...),
		Source: "tokenizer.json [post_processor]"}
}

// ApplyChatTemplateText renders msgs like ApplyChatTemplate, as text for a server that
// encodes it with add_special_tokens = true (a string prompt of /v1/completions): the text of
// the tokens TextSpecials says the server adds is removed from the start and the end of the
// rendering, so that the server's encoding, Before ‖ Encode(text) ‖ After, holds BOS once
// rather than twice (Llama 3.1's template writes <|begin_of_text|> and its tokenizer adds
// another). Errors are ApplyChatTemplate's.
func (t *Tokenizer) ApplyChatTemplateText(msgs []Message, addGenerationPrompt bool) (string, error) {
	s, err := t.ApplyChatTemplate(msgs, addGenerationPrompt)
	if err != nil {
		return "", err
	}
	return t.StripTextSpecials(s), nil
}

// StripTextSpecials removes from text the leading text of TextSpecials().Before and the
// trailing text of After, each once when present.
func (t *Tokenizer) StripTextSpecials(text string) string {
	sp := t.TextSpecials()
	if len(sp.Before) > 0 {
		text = strings.TrimPrefix(text, t.Decode(sp.Before, false))
	}
	if len(sp.After) > 0 {
		text = strings.TrimSuffix(text, t.Decode(sp.After, false))
	}
	return text
}

// TemplateBOS returns the text of the BOS token (tokenizer_config.json's bos_token) when the
// chat template writes it at the start of a rendering (Llama 3's does), "" otherwise — also
// when TextSpecials already has the server add it, since ApplyChatTemplateText then leaves it
// out. A server that adds a BOS of its own to every text prompt (llama.cpp reads
// add_bos_token from the model) would read it twice: see ApplyChatTemplateNoBOS.
func (t *Tokenizer) TemplateBOS() string {
	bos, _, _ := t.SpecialToken("bos_token") // its text, whether or not it encodes to one id
	if bos == "" || !t.HasChatTemplate() {
		return ""
	}
	s, err := t.ApplyChatTemplateText([]Message{{Role: "user", Content: "x"}}, true)
	if err != nil || !strings.HasPrefix(s, bos) {
		return ""
	}
	return bos
}

// ApplyChatTemplateNoBOS renders msgs like ApplyChatTemplateText, without the BOS text the
// template writes at its start (TemplateBOS), for a server that adds its own BOS to a text
// prompt. Errors are ApplyChatTemplate's.
func (t *Tokenizer) ApplyChatTemplateNoBOS(msgs []Message, addGenerationPrompt bool) (string, error) {
	s, err := t.ApplyChatTemplateText(msgs, addGenerationPrompt)
	if err != nil {
		return "", err
	}
	if bos := t.TemplateBOS(); bos != "" {
		s = strings.TrimPrefix(s, bos)
	}
	return s, nil
}
