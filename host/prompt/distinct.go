package prompt

import (
	"fmt"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// # More distinct prompts than corpus rows
//
// A prompt is built from a source q = 0, 1, 2, …: the text its body repeats. Sources below
// Rows are the corpus rows themselves. A cell, or a replay's set of concurrent requests, can
// need more distinct prompts than there are rows (B > 256 with the embedded corpus); the
// sources from Rows on are the rows rotated to start elsewhere in their own text, so that every
// prompt is distinct in content from its first token — a prefix cache shares nothing between
// two of them, where a row reused with another ending would share its whole opening:
//
//	source Rows + j, j = 0 … E − 1, is the j-th start point in this order:
//	  level 1: the second sentence start of row 0, of row 1, …, of the last row that has one;
//	  level 2: the third sentence start of each row that has one; … until no row has more;
//	  then the word starts that are not sentence starts, level by level the same way;
//	the text of start point (row r, byte offset a) is r[a:] ‖ separator ‖ r[:a] (its right
//	whitespace trimmed): the row read from that sentence or word on, its beginning moved to
//	the end.
//
// A sentence starts after ".", "!" or "?" (and any closing quotes or brackets) followed by
// white space, and after a newline; a word after white space. A start point whose first
// openingTokens (3) tokens, tokenized alone, are those of an earlier source is skipped (a line
// a row repeats, "of the" in two places), so no two sources open alike: the embedded corpus's
// 5,160 sentence and 50,096 word starts give E = 45,641 rotations under Qwen3, and two prompts
// of a cell share at most 3 tokens of content (the test of B = 4,096 prompts pins it; the
// corpus rows themselves share at most 2). Past Rows + E the rotations repeat in cycles c = 1, 2, …, each prompt of
// cycle c beginning with the first word of rotation c − 1 and a space: prompts of one cycle
// share that word, then differ as the rotations do.
//
// Prompt i of a cell whose first row is f uses source (f + i) mod Rows for i < Rows — the
// rule of a corpus large enough, unchanged — and source i for i ≥ Rows.

// Source returns the source of prompt i of a cell whose first corpus row is firstRow: the row
// (firstRow + i) mod Rows for i < Rows, source i beyond (see the comment above).
func (b *Builder) Source(firstRow, i int) int {
	if i < len(b.rows) {
		return (firstRow + i) % len(b.rows)
	}
	return i
}

// Sources is the number of distinct sources before the rotations repeat in cycles: Rows + E.
func (b *Builder) Sources() int { return len(b.rows) + len(b.startList()) }

// start is one start point: row and byte offset in its text.
type start struct{ row, at int }

// openingTokens is how many leading tokens of every source differ from every other's: a
// start point whose text begins with the same openingTokens tokens as an earlier source (a
// line a row repeats, "of the …" in two rows) is skipped, so two sources share at most
// openingTokens − 1 = 2 tokens of opening — as many as two corpus rows do under Qwen3.
const openingTokens = 3

// startList returns the rotations' start points, computed on first use (a tokenization of the
// first bytes of each start point, about 50,000 for the embedded corpus).
func (b *Builder) startList() []start {
	b.startsOnce.Do(func() { b.starts = startPoints(b.texts, b.codec) })
	return b.starts
}

// startPoints lists the rotations' start points of rows in the order of the rule above, less
// those whose opening is an earlier source's.
func startPoints(rows []string, c Codec) []start {
	sent := make([][]int, len(rows))
	words := make([][]int, len(rows))
	for r, t := range rows {
		s, w := textStarts(t)
		sent[r], words[r] = s, w
	}
	seen := map[string]bool{}
	key := func(t string) string {
		end := min(len(t), 64)
		for end < len(t) && !utf8.RuneStart(t[end]) {
			end++
		}
		ids := c.Encode(t[:end])
		return fmt.Sprint(ids[:min(len(ids), openingTokens)])
	}
	for _, t := range rows {
		seen[key(t)] = true
	}
	var out []start
	for _, lv := range [][][]int{sent, words} {
		for level := 0; ; level++ {
			more := false
			for r := range rows {
				if level < len(lv[r]) {
					more = true
					if k := key(rows[r][lv[r][level]:]); !seen[k] {
						seen[k] = true
						out = append(out, start{r, lv[r][level]})
					}
				}
			}
			if !more {
				break
			}
		}
	}
	return out
}

// textStarts returns the byte offsets in t of its sentence starts after the first and of its
// word starts that are not sentence starts, ascending.
func textStarts(t string) (sentences, words []int) {
	inEnd := false     // the last character was ".", "!" or "?", or a closing mark after one
	endBefore := false // the white space being read follows such a character
	sawNL := false     // the white space being read holds a newline
	prevSpace := false
	for i, r := range t {
		if unicode.IsSpace(r) {
			if !prevSpace {
				endBefore, sawNL = inEnd, false
			}
			sawNL = sawNL || r == '\n'
			prevSpace = true
			continue
		}
		if prevSpace && i > 0 {
			if endBefore || sawNL {
				sentences = append(sentences, i)
			} else {
				words = append(words, i)
			}
		}
		switch {
		case r == '.' || r == '!' || r == '?':
			inEnd = true
		case inEnd && strings.ContainsRune("\"')]}\u201d\u2019\u00bb", r):
		default:
			inEnd = false
		}
		prevSpace = false
	}
	return sentences, words
}

// sourceText returns the text of source q and a description of it for errors.
func (b *Builder) sourceText(q int) (string, string) {
	if q < len(b.rows) {
		return b.texts[q], fmt.Sprintf("corpus row %d", q)
	}
	starts := b.startList()
	j := q - len(b.rows)
	cycle := j / len(starts)
	sp := starts[j%len(starts)]
	row := b.texts[sp.row]
	text := row[sp.at:] + b.sep + strings.TrimRightFunc(row[:sp.at], unicode.IsSpace)
	desc := fmt.Sprintf("prompt source %d (corpus row %d from byte %d)", q, sp.row, sp.at)
	if cycle > 0 {
		w := starts[(cycle-1)%len(starts)]
		wt := b.texts[w.row][w.at:]
		if k := strings.IndexFunc(wt, unicode.IsSpace); k > 0 {
			wt = wt[:k]
		}
		text = wt + " " + text
		desc += fmt.Sprintf(", cycle %d", cycle)
	}
	return text, desc
}

// describe names source q in errors.
func (b *Builder) describe(q int) string {
	if q >= 0 && q < len(b.rows) {
		return fmt.Sprintf("corpus row %d", q)
	}
	return fmt.Sprintf("prompt source %d", q)
}

// rowSlot is the plan of a corpus row, made on first use.
type rowSlot struct {
	once  sync.Once
	plan  rowPlan
	empty bool // the row tokenizes to no tokens
}

// variants caches the plans of sources beyond the rows (planned on first use: a plan costs a
// tokenization of four repeats of the text).
type variants struct {
	mu sync.Mutex
	m  map[int]*variantPlan
}

type variantPlan struct {
	once sync.Once
	plan rowPlan
	desc string
}

// planOf returns the plan of source q and its description.
func (b *Builder) planOf(q int) (*rowPlan, string, error) {
	if q < 0 {
		return nil, "", fmt.Errorf("prompt source %d: want ≥ 0", q)
	}
	if q < len(b.rows) {
		r := &b.rows[q]
		r.once.Do(func() {
			text := b.texts[q]
			if r.empty = len(b.codec.Encode(text)) == 0; !r.empty {
				r.plan = b.plan(text + b.sep)
			}
		})
		if r.empty {
			return nil, "", fmt.Errorf("corpus row %d tokenizes to no tokens", q)
		}
		return &r.plan, fmt.Sprintf("corpus row %d", q), nil
	}
	if len(b.startList()) == 0 {
		return nil, "", fmt.Errorf("prompt source %d: the corpus has %d rows and no sentence or word to rotate them at", q, len(b.rows))
	}
	b.vars.mu.Lock()
	if b.vars.m == nil {
		b.vars.m = map[int]*variantPlan{}
	}
	v := b.vars.m[q]
	if v == nil {
		v = &variantPlan{}
		b.vars.m[q] = v
	}
	b.vars.mu.Unlock()
	v.once.Do(func() {
		text, desc := b.sourceText(q)
		v.plan, v.desc = b.plan(text+b.sep), desc
	})
	return &v.plan, v.desc, nil
}

// Block returns the first n tokens of source q's text repeated (text ‖ separator ‖ text ‖ …),
// with no chat template or suffix: a prefix block of a replayed prompt (host/replay). The ids
// are the canonical tokenization of that text cut after n tokens (the cut may fall inside a
// character of several tokens). It fails for q < 0 or n < 0.
func (b *Builder) Block(q, n int) ([]int32, error) {
	switch {
	case q < 0 || n < 0:
		return nil, fmt.Errorf("prompt block of source %d, %d tokens: want both ≥ 0", q, n)
	case n == 0:
		return []int32{}, nil
	case q >= len(b.rows) && len(b.startList()) == 0:
		return nil, fmt.Errorf("prompt source %d: the corpus has %d rows and no sentence or word to rotate them at", q, len(b.rows))
	}
	text, desc := b.sourceText(q)
	unit := text + b.sep
	reps := n*4/len(unit) + 2 // about 4 bytes a token
	for {
		ids := b.codec.Encode(strings.Repeat(unit, reps))
		if len(ids) > n { // one token more than needed: the cut token is not the text's last
			return ids[:n], nil
		}
		if reps > 8*n {
			return nil, fmt.Errorf("%s: %d tokens after %d repeats, want %d", desc, len(ids), reps, n)
		}
		reps *= 2
	}
}
