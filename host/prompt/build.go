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

// Build returns one prompt per length: prompt i uses source [Builder.Source](firstRow, i) —
// corpus row (firstRow + i) mod Rows while i < Rows, a rotation of a row beyond (distinct.go)
// — and has exactly lengths[i] tokens. It fails when a length is below Overhead + 1.
func (b *Builder) Build(firstRow int, lengths []int) ([][]int32, error) {
	b.prepare(firstRow, len(lengths))
	out := make([][]int32, len(lengths))
	for i, n := range lengths {
		p, err := b.One(b.Source(firstRow, i), n)
		if err != nil {
			return nil, fmt.Errorf("prompt %d: %w", i, err)
		}
		out[i] = p
	}
	return out, nil
}

// prepare plans the sources of prompts 0 … n-1 of a cell whose first corpus row is firstRow
// (see [Builder.Source]) on every CPU, so that building them one by one finds them planned; a
// source is planned once, on its first use, whoever asks. Build calls it; [Builder.One] plans
// on demand. Errors are left to the prompts' builds.
func (b *Builder) prepare(firstRow, n int) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers < 2 {
		return
	}
	var wg sync.WaitGroup
	var next atomic.Int64
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				_, _, _ = b.planOf(b.Source(firstRow, i))
			}
		})
	}
	wg.Wait()
}

// maxTries bounds the cuts tried for one prompt (each costs a tokenization of the end of the
// body and the tail); a prompt needs one or two.
const maxTries = 64

// One returns the prompt of exactly n tokens built from source q (corpus row q for q < Rows;
// see [Builder.Source]): the canonical tokenization of its text (Encode(Decode(ids)) = ids),
// with the body cut at a character boundary and the ids ending with the suffix and template
// end. It fails when n is below Overhead + 1, or when no cut of the body gives exactly n
// tokens (a row whose every character takes several tokens can leave some lengths
// unreachable).
func (b *Builder) One(q, n int) ([]int32, error) {
	if n-b.Overhead() < 1 {
		return nil, fmt.Errorf("length %d tokens is below the %d tokens of chat template and suffix plus one body token", n, b.Overhead())
	}
	p, desc, err := b.planOf(q)
	if err != nil {
		return nil, err
	}
	if !p.periodic {
		return b.whole(p, desc, n)
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
	if ids, err := b.whole(p, desc, n); err == nil {
		return ids, nil
	}
	return nil, fmt.Errorf("%s: no cut of the body at a character boundary gives exactly %d tokens (closest %d)", desc, n, closest)
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
	if !rs.hasPrefix(p.unitTxt, d) {
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
func (b *Builder) whole(p *rowPlan, desc string, n int) ([]int32, error) {
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
	return nil, fmt.Errorf("%s: no cut of the body at a character boundary gives exactly %d tokens (closest %d)", desc, n, closest)
}

func endsWith(s, t []int32) bool { return len(s) >= len(t) && slices.Equal(s[len(s)-len(t):], t) }

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
