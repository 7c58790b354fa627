package tokenizer

import (
	"fmt"
	"strings"
	"unicode"
)

// rewriteTemplate prepares a chat template for github.com/ardanlabs/jinja v1.8.0, whose
// whitespace control differs from Jinja2's (as configured by transformers: trim_blocks,
// lstrip_blocks, no keep_trailing_newline): a "{%-" or "-%}" marker and the lstrip/trim
// defaults act on the nearest text segment even across other tags, so `A: {{ x }}{%- endif %}`
// renders "A:x". The rewrite:
//
//  1. lexes the template as Jinja2 does (tags, comments, raw blocks, string literals inside
//     tags) and drops one trailing newline;
//  2. applies Jinja2's whitespace control itself: "-" strips all whitespace on its side,
//     "+" disables the defaults, block and comment tags lstrip their line's indentation
//     and trim one newline after them;
//  3. emits every remaining text run as a string-literal output `{{ "..." }}`, so the
//     engine has no text segment its trimming could reach, and removes the markers;
//  4. inserts `{{ __genload_line(N) }}` before every tag so a render error can name the
//     template line of the last tag reached.
//
// Newlines removed by trimming are kept as whitespace inside the emitted tags, so the
// engine's own parse errors still carry the original line numbers.
func rewriteTemplate(src string) (string, error) {
	src = strings.TrimSuffix(src, "\n")
	toks, err := lexTemplate(src)
	if err != nil {
		return "", err
	}
	applyWhitespaceControl(toks)
	var b strings.Builder
	b.Grow(len(src) * 2)
	for _, t := range toks {
		switch t.kind {
		case tokText:
			nl := strings.Count(t.orig, "\n") - strings.Count(t.text, "\n")
			if t.text == "" && nl == 0 {
				continue
			}
			b.WriteString(`{{ "`)
			for i := 0; i < len(t.text); i++ {
				if c := t.text[i]; c == '\\' || c == '"' {
					b.WriteByte('\\')
				}
				b.WriteByte(t.text[i])
			}
			b.WriteString(`"`)
			b.WriteString(strings.Repeat("\n", nl))
			b.WriteString(" }}")
		case tokComment:
			b.WriteString("{#" + t.text + "#}")
		case tokExpr, tokStmt:
			if t.skip {
				b.WriteString(strings.Repeat("\n", strings.Count(t.text, "\n")))
				continue
			}
			fmt.Fprintf(&b, "{{ %s(%d) }}", lineMarker, t.line)
			if t.kind == tokExpr {
				b.WriteString("{{" + t.text + "}}")
			} else {
				b.WriteString("{%" + t.text + "%}")
			}
		}
	}
	return b.String(), nil
}

type tmplTokKind int

const (
	tokText tmplTokKind = iota
	tokExpr
	tokStmt
	tokComment
)

// tmplTok is a lexed template piece: text (text, plus orig before trimming) or a tag (text
// is the body between delimiters and markers).
type tmplTok struct {
	kind         tmplTokKind
	text, orig   string
	lmark, rmark byte // '-', '+' or 0
	line         int  // 1-based line of the tag opener
	skip         bool // raw/endraw: whitespace control only, not emitted
}

// lexTemplate splits src into text, {{ }}, {% %} and {# #} pieces like Jinja2's lexer:
// quotes inside {{ }} and {% %} may contain closers, {% raw %}...{% endraw %} is text.
func lexTemplate(src string) ([]tmplTok, error) {
	var toks []tmplTok
	line := 1
	addText := func(s string) {
		if s != "" {
			toks = append(toks, tmplTok{kind: tokText, text: s, orig: s})
		}
	}
	i, textStart := 0, 0
	for i < len(src) {
		if src[i] != '{' || i+1 >= len(src) || (src[i+1] != '{' && src[i+1] != '%' && src[i+1] != '#') {
			i++
			continue
		}
		addText(src[textStart:i])
		line += strings.Count(src[textStart:i], "\n")
		t, next, err := lexTag(src, i, line)
		if err != nil {
			return nil, err
		}
		toks = append(toks, t)
		line += strings.Count(src[i:next], "\n")
		i, textStart = next, next
		if t.kind == tokStmt && strings.TrimSpace(t.text) == "raw" {
			// raw block: everything up to {% endraw %} is text
			end, k, next, ok := endRaw(src, i)
			if !ok {
				return nil, fmt.Errorf("line %d: {%% raw %%} without {%% endraw %%}", t.line)
			}
			toks[len(toks)-1].skip = true
			addText(src[i:k])
			line += strings.Count(src[i:k], "\n")
			end.line = line
			toks = append(toks, end)
			i, textStart = next, next
		}
	}
	addText(src[textStart:])
	return toks, nil
}

// lexTag reads the tag that opens at src[i] ("{{", "{%" or "{#") on line: its kind, its
// whitespace-control marks and its body; quotes inside {{ }} and {% %} may contain the
// closer. It returns the tag and the index after its closer, or an error for an unclosed tag.
func lexTag(src string, i, line int) (tmplTok, int, error) {
	kind := map[byte]tmplTokKind{'{': tokExpr, '%': tokStmt, '#': tokComment}[src[i+1]]
	closer := map[tmplTokKind]string{tokExpr: "}}", tokStmt: "%}", tokComment: "#}"}[kind]
	j := i + 2
	t := tmplTok{kind: kind, line: line}
	if j < len(src) && (src[j] == '-' || src[j] == '+') {
		t.lmark = src[j]
		j++
	}
	bodyStart := j
	end := -1
	for j < len(src) {
		c := src[j]
		if kind != tokComment && (c == '"' || c == '\'') {
			j++
			for j < len(src) && src[j] != c {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			j++
			continue
		}
		if strings.HasPrefix(src[j:], closer) {
			end = j
			break
		}
		j++
	}
	if end < 0 {
		return t, 0, fmt.Errorf("line %d: unclosed %s", line, map[tmplTokKind]string{tokExpr: "{{", tokStmt: "{%", tokComment: "{#"}[kind])
	}
	body := src[bodyStart:end]
	if n := len(body); n > 0 && (body[n-1] == '-' || (body[n-1] == '+' && kind != tokComment)) {
		t.rmark = body[n-1]
		body = body[:n-1]
	}
	t.text = body
	return t, end + 2, nil
}

// endRaw finds the {% endraw %} of a raw block whose body starts at src[i]: the endraw tag
// (its marks and text; skip set, line left to the caller), the index of its "{%" and the
// index after its "%}"; ok is false when there is none.
func endRaw(src string, i int) (end tmplTok, at, next int, ok bool) {
	k := i
	for k < len(src) {
		p := strings.Index(src[k:], "{%")
		if p < 0 {
			break
		}
		k += p
		e := strings.Index(src[k:], "%}")
		if e < 0 {
			break
		}
		inner := src[k+2 : k+e]
		lm, rm := byte(0), byte(0)
		if inner != "" && (inner[0] == '-' || inner[0] == '+') {
			lm, inner = inner[0], inner[1:]
		}
		if n := len(inner); n > 0 && (inner[n-1] == '-' || inner[n-1] == '+') {
			rm, inner = inner[n-1], inner[:n-1]
		}
		if strings.TrimSpace(inner) == "endraw" {
			return tmplTok{kind: tokStmt, text: inner, lmark: lm, rmark: rm, skip: true}, k, k + e + 2, true
		}
		k += 2
	}
	return tmplTok{}, 0, 0, false
}

// applyWhitespaceControl trims the text pieces around tags as Jinja2's lexer does with
// trim_blocks=True and lstrip_blocks=True.
func applyWhitespaceControl(toks []tmplTok) {
	lineStarting := true // the next text starts a line (template start, or after a consumed "\n")
	for i := range toks {
		t := &toks[i]
		if t.kind == tokText {
			continue
		}
		block := t.kind == tokStmt || t.kind == tokComment
		if i > 0 && toks[i-1].kind == tokText {
			p := &toks[i-1]
			switch {
			case t.lmark == '-':
				p.text = strings.TrimRightFunc(p.text, unicode.IsSpace)
			case block && t.lmark != '+':
				lpos := strings.LastIndexByte(p.text, '\n') + 1
				if tail := p.text[lpos:]; (lpos > 0 || lineStarting) && tail != "" && strings.TrimLeftFunc(tail, unicode.IsSpace) == "" {
					p.text = p.text[:lpos]
				}
			}
		}
		lineStarting = false
		if i+1 < len(toks) && toks[i+1].kind == tokText {
			n := &toks[i+1]
			switch {
			case t.rmark == '-':
				trimmed := strings.TrimLeftFunc(n.text, unicode.IsSpace)
				lineStarting = strings.HasSuffix(n.text[:len(n.text)-len(trimmed)], "\n")
				n.text = trimmed
			case block && t.rmark != '+':
				if strings.HasPrefix(n.text, "\n") {
					n.text = n.text[1:]
					lineStarting = true
				}
			}
		}
	}
}
