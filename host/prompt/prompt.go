// Package prompt turns corpus rows into token-id prompts of exact lengths.
//
// A prompt of target length n tokens is the canonical tokenization of its own text
//
//	text = pre ‖ body ‖ joint ‖ suffix ‖ post
//	pre, post = the chat template around the user content   e.g. "<|im_start|>user\n", "<|im_end|>\n<|im_start|>assistant\n"
//	body  = (row ‖ sep ‖ row ‖ sep ‖ …) cut at a character boundary
//	joint = sep, or (where sep cannot reach n) " " ‖ sep, "… " ‖ sep, " ", "\n" or nothing
//	ids   = Encode(text), with len(ids) = n exactly and Encode(Decode(ids)) = ids
//
// so a server that receives the ids and one that re-tokenizes the decoded text count the same
// n prompt tokens. The suffix is never cut and the chat template is applied once. Over the
// default matrix's 1,456 prompts (embedded Qwen3) the joint is the separator in 1,179, " \n\n"
// in 231, "… \n\n" in 43 and " " in 3.
//
// Encoding every prompt whole would cost a tokenization of every token sent (26 M tokens for
// the default matrix), so New finds once per row the period of Encode(pre ‖ u⁴), u = row ‖ sep:
// head ‖ unit ‖ unit ‖ …, where the unit's text is u or a rotation of it (gpt-oss tokenizes
// the junction "}\n\n//" of two code rows as one token), and restart points in the unit from
// which the rest tokenizes on its own after a few tokens of left context. A prompt is then
// head ‖ unit^m ‖ unit[:at] ‖ Encode(context ‖ the rest of the body ‖ joint ‖ suffix ‖ post)
// minus the context, so only about restartEvery body tokens and the tail are tokenized per
// try. The cut is moved a token at a time, and the joints tried, until the prompt has exactly
// n tokens. A row without a period is built by tokenizing the whole text.
package prompt

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// Codec turns text into token ids, recognising special tokens written in the text
// (add_special_tokens = false), and ids back into text. It must be safe for concurrent use
// (New plans rows in parallel). host/tokenizer's *Tokenizer satisfies it.
type Codec interface {
	Encode(text string) []int32
	Decode(ids []int32, skipSpecial bool) string
}

// Template renders one user message whose content is content, with the generation prompt
// (add_generation_prompt = true). A nil Template means no chat template (raw completion).
type Template func(content string) (string, error)

// Options are the text parts of every prompt.
type Options struct {
	// Suffix is the analysis instruction ending every body, e.g.
	// "Summarize and analyse the text above.". Required.
	Suffix string
	// Separator joins repeats of a row and precedes the suffix. Default "\n\n".
	Separator string
	// MinBody is the smallest body in tokens that [Builder.MinLen] allows. Default 32, so that
	// any two prompts built from distinct rows differ (the corpus test checks that the first 32
	// tokens of the rows are pairwise distinct).
	MinBody int
}

// Builder builds prompts; it is immutable after [New] and safe for concurrent use.
type Builder struct {
	codec        Codec
	pre, tailTxt string  // template text before the content; separator ‖ suffix ‖ template after
	sep          string  // separator
	prefix, tail []int32 // Encode(pre), Encode(tailTxt)
	end          []int32 // Encode(suffix ‖ template after): every prompt's ids end with it
	tmplTokens   int     // tokens of the chat template's own text: Encode(pre) + Encode(post)
	joints       []joint // text between the body and the suffix, tried in order
	anchors      []anchor
	rows         []rowPlan
	minBody      int
}

// joint is the text between the body and the suffix. The separator comes first; the others
// reach lengths it cannot. A body ending in punctuation or in a whitespace token merges with
// the separator in byte-level BPE vocabularies ("." + "\n\n" is the one token ".\n\n", and
// " " + "\n\n" is " \n\n"), so the cut before it and the cut after it give the same length
// and one length is unreachable there: " \n\n" after punctuation, an ellipsis and a space "… "
// (the text was cut; the space keeps "…" from merging with the separator) before it, or a single space or newline (or, last, nothing) after the
// next token, reach it. A character of several tokens (a Korean syllable in byte-level BPE)
// leaves a gap that these fill as well.
type joint struct {
	text     string // joint ‖ suffix ‖ template after
	checkEnd bool   // the ids must end with Encode(suffix ‖ template after)
}

// anchor is text put before a window's left context so that the tokenizer's start-of-text
// handling (Llama 2's prepended "▁") falls on it rather than on the context.
type anchor struct {
	text string
	ids  []int32
}

// rowPlan is what New learns about one corpus row.
type rowPlan struct {
	unitTxt  string    // text of unit: row ‖ separator, or a rotation of it
	head     []int32   // the ids before the period: template prefix and (about) the first repeat
	unit     []int32   // ids of one period: every later repeat
	headTxt  string    // Decode(head ‖ unit)
	restarts []restart // restart points in the unit, by position; the first at 0
	anchor   int       // index into Builder.anchors
	periodic bool      // false: build by tokenizing the whole text
	bytesTok float64   // bytes per token of the row's repeats (fallback search step)
}

// restart is a point of the unit from which the rest tokenizes on its own: a cut at j ≥ at
// tokenizes only the text from at (after ctx, the tokens before at, as left context).
type restart struct {
	at   int     // position in the unit
	ctx  []int32 // the tokens before at (for at = 0, the end of the previous repeat)
	text string  // Decode(ctx) ‖ the unit's text from at (a window's text is a prefix of it)
}

// restartEvery is the spacing in tokens of the restart points New looks for in a unit: a cut
// then tokenizes at most about this many body tokens with the tail.
const restartEvery = 24

// sentinel stands for the user content while the template is rendered; it is split out of
// the rendered text, so it must not be touched by the template (no escaping in chat templates).
const sentinel = "\uE000genload-body\uE001"

// New tokenizes every row and the template parts, and checks for each row that its repeats
// tokenize periodically (see the package comment). It fails when the template does not
// render, renders the content other than exactly once, or a row tokenizes to nothing.
func New(codec Codec, tmpl Template, rows []string, opt Options) (*Builder, error) {
	if opt.Suffix == "" {
		return nil, fmt.Errorf("prompt: empty suffix")
	}
	if opt.Separator == "" {
		opt.Separator = "\n\n"
	}
	if opt.MinBody == 0 {
		opt.MinBody = 32
	}
	pre, post := "", ""
	if tmpl != nil {
		out, err := tmpl(sentinel)
		if err != nil {
			return nil, fmt.Errorf("prompt: chat template: %w", err)
		}
		if c := strings.Count(out, sentinel); c != 1 {
			return nil, fmt.Errorf("prompt: chat template rendered the user content %d times, want exactly once", c)
		}
		pre, post, _ = strings.Cut(out, sentinel)
	}
	b := &Builder{codec: codec, pre: pre, sep: opt.Separator, tailTxt: opt.Separator + opt.Suffix + post, minBody: opt.MinBody}
	if pre != "" {
		b.prefix = codec.Encode(pre)
	}
	b.tail = codec.Encode(b.tailTxt)
	if post != "" {
		b.tmplTokens = len(b.prefix) + len(codec.Encode(post))
	} else {
		b.tmplTokens = len(b.prefix)
	}
	b.end = codec.Encode(opt.Suffix + post)
	if !endsWith(b.tail, b.end) {
		b.end = b.tail
	}
	rest := opt.Suffix + post
	b.joints = []joint{{b.tailTxt, true}, {" " + b.tailTxt, true}, {"\u2026 " + b.tailTxt, true},
		{" " + rest, false}, {"\n" + rest, false}, {rest, false}}
	b.anchors = []anchor{{}, {text: opt.Separator, ids: codec.Encode(opt.Separator)}}
	// Rows are planned in parallel (each costs a tokenization of four repeats).
	b.rows = make([]rowPlan, len(rows))
	empty := make([]bool, len(rows))
	var wg sync.WaitGroup
	var next atomic.Int64
	for range min(runtime.GOMAXPROCS(0), len(rows)) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < len(rows); i = int(next.Add(1)) - 1 {
				if empty[i] = len(codec.Encode(rows[i])) == 0; !empty[i] {
					b.rows[i] = b.plan(rows[i] + opt.Separator)
				}
			}
		})
	}
	wg.Wait()
	if i := slices.Index(empty, true); i >= 0 {
		return nil, fmt.Errorf("prompt: corpus row %d tokenizes to no tokens", i)
	}
	return b, nil
}

// maxCtx is the most tokens of left context tried for a restart point.
const maxCtx = 8

// plan finds the period of the tokenization of pre ‖ u ‖ u ‖ …: Encode(pre ‖ u⁴) =
// head ‖ unit ‖ unit ‖ …, where the unit's text is u or a rotation of it (when the junction
// of two repeats is one token, as gpt-oss's "}\n\n//"), and a restart point at the end of the
// unit. It returns a plan with periodic false when there is none.
func (b *Builder) plan(u string) rowPlan {
	c := b.codec
	p := rowPlan{unitTxt: u}
	full := b.pre + u + u + u + u
	e4 := c.Encode(full)
	est := (len(e4) - len(b.prefix)) / 4 // tokens per repeat, about
	p.bytesTok = float64(len(u)) / float64(max(1, est))
	// The period is within a few tokens of a quarter of the body (the first repeat and the
	// last may differ from it by their junctions with the template and the end of the text).
	for dp := 0; dp <= 8; dp++ {
		for _, period := range []int{est - dp, est + dp} {
			if period >= 2 && (dp > 0 || period == est) && b.findPeriod(&p, e4, full, u, period) {
				return p
			}
			if dp == 0 {
				break
			}
		}
	}
	return p
}

// findPeriod looks for the head and the unit of period tokens in e4 = Encode(full) and a
// restart point at the end of the unit; it fills p and returns true when found.
func (b *Builder) findPeriod(p *rowPlan, e4 []int32, full, u string, period int) bool {
	c := b.codec
	// The first h after which two whole periods repeat, the third agrees up to the last
	// repeat's final tokens (which see the end of the text), the head holds the whole
	// template prefix, and the unit ends with a restart point.
	slack := min(8, period/2)
	for h := 0; h+3*period <= len(e4); h++ {
		if !slices.Equal(e4[h:h+period], e4[h+period:h+2*period]) ||
			!slices.Equal(e4[h+period:h+2*period-slack], e4[h+2*period:h+3*period-slack]) {
			continue
		}
		headTxt := c.Decode(e4[:h], false)
		headUnit := c.Decode(e4[:h+period], false)
		if len(headTxt) < len(b.pre) || len(headUnit)-len(headTxt) != len(u) || !strings.HasPrefix(full, headUnit) {
			continue
		}
		ut := headUnit[len(headTxt):]
		if !strings.HasPrefix(full[len(headUnit):], ut) {
			continue
		}
		unit := e4[h : h+period]
		for r := 2; r <= min(maxCtx, len(unit)-1); r++ {
			ctx := unit[len(unit)-r:]
			ctxTxt := c.Decode(ctx, false)
			if !strings.HasSuffix(ut, ctxTxt) {
				continue
			}
			for ai, a := range b.anchors {
				got := c.Encode(a.text + ctxTxt + ut)
				if len(got) == len(a.ids)+r+len(unit) && slices.Equal(got[:len(a.ids)], a.ids) &&
					slices.Equal(got[len(a.ids):len(a.ids)+r], ctx) && slices.Equal(got[len(a.ids)+r:], unit) {
					p.head, p.unit, p.headTxt, p.unitTxt = e4[:h], unit, headUnit, ut
					p.anchor, p.periodic = ai, true
					p.restarts = b.restarts(unit, ut, ctx, ctxTxt, a)
					return true
				}
			}
		}
	}
	return false
}

// restarts finds restart points about every restartEvery tokens of unit (text ut): a point
// at i qualifies when the r tokens before it decode to the text just before it and the anchor,
// those tokens and the text from i tokenize back to the same tokens for a stretch. The first
// restart point, at 0, is the one plan verified over the whole unit.
func (b *Builder) restarts(unit []int32, ut string, ctx0 []int32, ctx0Txt string, a anchor) []restart {
	c := b.codec
	out := []restart{{at: 0, ctx: ctx0, text: ctx0Txt + ut}}
	// Offsets in ut are decoded from the previous restart point on (its context stands for
	// the text before it), so that each costs a decoding of about restartEvery tokens.
	prevCtx, prevTxt, prevAt, prevOff := ctx0, ctx0Txt, 0, 0
	buf := make([]int32, 0, maxCtx+2*restartEvery)
	decodeTo := func(k int) (int, bool) { // byte offset in ut of position k, at a character boundary
		buf = append(append(buf[:0], prevCtx...), unit[prevAt:k]...)
		d := c.Decode(buf, false)
		if len(d) < len(prevTxt) || !strings.HasPrefix(ut[prevOff:], d[len(prevTxt):]) || !strings.HasPrefix(d, prevTxt) {
			return 0, false
		}
		return prevOff + len(d) - len(prevTxt), true
	}
	const probe = 6 // tokens after a restart point that must come out the same
	for i := restartEvery; i+restartEvery/2 < len(unit); i += restartEvery {
	candidates:
		for k := i; k < i+restartEvery/2; k++ {
			off, ok := decodeTo(k)
			if !ok || off == 0 {
				continue
			}
			end := min(len(unit), k+probe)
			endOff, ok := decodeTo(end)
			if !ok {
				continue
			}
			for r := 2; r <= maxCtx && r <= k; r++ {
				cx := unit[k-r : k]
				cxTxt := c.Decode(cx, false)
				if !strings.HasSuffix(ut[:off], cxTxt) {
					continue
				}
				got := c.Encode(a.text + cxTxt + ut[off:min(len(ut), endOff+16)])
				want := len(a.ids) + r + (end - k)
				if len(got) >= want && slices.Equal(got[:len(a.ids)], a.ids) && slices.Equal(got[len(a.ids):len(a.ids)+r], cx) &&
					slices.Equal(got[len(a.ids)+r:want], unit[k:end]) {
					out = append(out, restart{at: k, ctx: cx, text: cxTxt + ut[off:]})
					prevCtx, prevTxt, prevAt, prevOff = cx, cxTxt, k, off
					break candidates
				}
			}
		}
	}
	return out
}

// Overhead is the number of tokens every prompt spends outside its body: chat template,
// separator and suffix.
func (b *Builder) Overhead() int { return len(b.prefix) + len(b.tail) }

// TemplateTokens is the number of tokens of the chat template's own text around the user
// content (Encode(before) + Encode(after)), 0 without a template: what a server that applies
// the same template to a completions prompt adds to it.
func (b *Builder) TemplateTokens() int { return b.tmplTokens }

// MinLen is the shortest prompt in tokens: Overhead + MinBody.
func (b *Builder) MinLen() int { return b.Overhead() + b.minBody }

// Rows is the number of corpus rows.
func (b *Builder) Rows() int { return len(b.rows) }

// Prefix and Tail return copies of the token ids around the body.
func (b *Builder) Prefix() []int32 { return append([]int32(nil), b.prefix...) }

// Tail returns a copy of the token ids after the body with the separator as the joint
// (separator, suffix, template end): Encode(sep ‖ suffix ‖ post). A prompt ends with them
// unless its body's last token merges with the separator; its text always ends with
// suffix ‖ post.
func (b *Builder) Tail() []int32 { return append([]int32(nil), b.tail...) }

// Build returns one prompt per length: prompt i uses corpus row (firstRow + i) mod Rows and has
// exactly lengths[i] tokens. It fails when a length is below Overhead + 1.
func (b *Builder) Build(firstRow int, lengths []int) ([][]int32, error) {
	out := make([][]int32, len(lengths))
	for i, n := range lengths {
		p, err := b.One((firstRow+i)%len(b.rows), n)
		if err != nil {
			return nil, fmt.Errorf("prompt %d: %w", i, err)
		}
		out[i] = p
	}
	return out, nil
}

// maxTries bounds the cuts tried for one prompt (each costs a tokenization of the end of the
// body and the tail); a prompt needs one or two.
const maxTries = 64

// One returns the prompt of exactly n tokens built from corpus row row: the canonical
// tokenization of its text (Encode(Decode(ids)) = ids), with the body cut at a character
// boundary and the ids ending with the suffix and template end. It fails when n is below
// Overhead + 1, or when no cut of the body gives exactly n tokens (a row whose every
// character takes several tokens can leave some lengths unreachable).
func (b *Builder) One(row, n int) ([]int32, error) {
	if n-b.Overhead() < 1 {
		return nil, fmt.Errorf("length %d tokens is below the %d tokens of chat template and suffix plus one body token", n, b.Overhead())
	}
	p := &b.rows[row]
	if !p.periodic {
		return b.whole(p, row, n)
	}
	type key struct{ q, v int }
	tried := map[key]bool{}
	closest := -1
	try := func(q, v int) (int, []int32) {
		if q < 1 || tried[key{q, v}] {
			return -1, nil
		}
		tried[key{q, v}] = true
		l, ids := b.cut(p, q, v, n)
		if l >= 0 && (closest < 0 || abs(l-n) < abs(closest-n)) {
			closest = l
		}
		return l, ids
	}
	// Newton steps from q0 (the cut if nothing merges), then a spiral around it with every
	// joint.
	q0 := n - len(b.tail)
	for q, k := q0, 0; k < 4; k++ {
		l, ids := try(q, 0)
		if l == n {
			return ids, nil
		}
		if l < 0 {
			break
		}
		q += n - l
	}
	for d := 0; len(tried) < maxTries && d <= maxTries; d++ {
		for _, q := range []int{q0 - d, q0 + d} {
			for v := range b.joints {
				if l, ids := try(q, v); l == n {
					return ids, nil
				}
			}
		}
	}
	if ids, err := b.whole(p, row, n); err == nil {
		return ids, nil
	}
	return nil, fmt.Errorf("corpus row %d: no cut of the body at a character boundary gives exactly %d tokens (closest %d)", row, n, closest)
}

// cut returns the length of the prompt whose body is the first q tokens of
// head ‖ unit ‖ unit ‖ …, re-tokenized with joint v, the suffix and the template end, and the
// prompt itself when that length is want; -1 when the cut is not at a character boundary,
// leaves no body, or disturbs the suffix's ids or the context of the window.
func (b *Builder) cut(p *rowPlan, q, v, want int) (int, []int32) {
	c := b.codec
	tail := b.joints[v]
	if h := len(p.head) + len(p.unit); q <= h {
		// Within the first two repeats: tokenize the whole (short) text.
		ids := make([]int32, 0, h)
		ids = append(append(ids, p.head...), p.unit...)[:q]
		d := c.Decode(ids, false)
		if len(d) <= len(b.pre) || !strings.HasPrefix(p.headTxt, d) {
			return -1, nil
		}
		out := c.Encode(d + tail.text)
		if tail.checkEnd && !endsWith(out, b.end) {
			return -1, nil
		}
		return len(out), out
	}
	m := (q - len(p.head)) / len(p.unit) // whole later repeats before the cut (≥ 1)
	j := (q - len(p.head)) % len(p.unit)
	ri := 0
	for ri+1 < len(p.restarts) && p.restarts[ri+1].at <= j {
		ri++
	}
	rs := &p.restarts[ri]
	win := make([]int32, 0, len(rs.ctx)+j-rs.at)
	win = append(append(win, rs.ctx...), p.unit[rs.at:j]...)
	d := c.Decode(win, false)
	if !strings.HasPrefix(rs.text, d) {
		return -1, nil // the cut splits a character
	}
	a := b.anchors[p.anchor]
	w := c.Encode(a.text + d + tail.text)
	k := len(a.ids) + len(rs.ctx)
	if len(w) < k || !slices.Equal(w[:len(a.ids)], a.ids) || !slices.Equal(w[len(a.ids):k], rs.ctx) || tail.checkEnd && !endsWith(w, b.end) {
		return -1, nil
	}
	l := len(p.head) + m*len(p.unit) + rs.at + len(w) - k
	if l != want {
		return l, nil
	}
	out := make([]int32, 0, l)
	out = append(out, p.head...)
	for range m {
		out = append(out, p.unit...)
	}
	out = append(out, p.unit[:rs.at]...)
	return l, append(out, w[k:]...)
}

// whole builds the prompt of n tokens by tokenizing its whole text, moving the cut of the
// body (a byte offset into row ‖ sep ‖ row ‖ …, at a character boundary) until the text has
// n tokens: the path for rows whose repeats do not tokenize periodically. Each try costs a
// tokenization of the whole prompt.
func (b *Builder) whole(p *rowPlan, row, n int) ([]int32, error) {
	u := p.unitTxt
	body := func(nb int) string {
		var s strings.Builder
		s.Grow(len(b.pre) + nb + len(b.tailTxt))
		s.WriteString(b.pre)
		for k := nb; k > 0; k -= len(u) {
			s.WriteString(u[:min(k, len(u))])
		}
		s.WriteString(b.tailTxt)
		return s.String()
	}
	_, first := utf8.DecodeRuneInString(u)
	atRune := func(nb int) int { // largest character boundary ≤ nb, at least one character
		for nb > first && !utf8.RuneStart(u[nb%len(u)]) {
			nb--
		}
		return max(nb, first)
	}
	nb := atRune(int(float64(n-b.Overhead()) * p.bytesTok))
	tried := map[int]bool{}
	closest := -1
	for len(tried) < maxTries {
		if tried[nb] {
			nb = atRune(nb + 1 + len(tried)%7) // leave a cycle
			if tried[nb] {
				break
			}
		}
		tried[nb] = true
		ids := b.codec.Encode(body(nb))
		if len(ids) == n {
			return ids, nil
		}
		if closest < 0 || abs(len(ids)-n) < abs(closest-n) {
			closest = len(ids)
		}
		step := int(float64(n-len(ids)) * p.bytesTok)
		if step == 0 {
			step = 1
			if len(ids) > n {
				step = -1
			}
		}
		next := nb + step
		if step > 0 { // a character boundary past nb
			for next < nb+4*len(u) && !utf8.RuneStart(u[next%len(u)]) {
				next++
			}
		} else {
			next = atRune(next)
		}
		nb = max(next, first)
	}
	return nil, fmt.Errorf("corpus row %d: no cut of the body at a character boundary gives exactly %d tokens (closest %d)", row, n, closest)
}

func endsWith(s, t []int32) bool { return len(s) >= len(t) && slices.Equal(s[len(s)-len(t):], t) }

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
