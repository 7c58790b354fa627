package prompt

import (
	"slices"
	"strings"
)

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
	at     int     // position in the unit
	ctx    []int32 // the tokens before at (for at = 0, the end of the previous repeat)
	ctxTxt string  // Decode(ctx)
	off    int     // byte offset of position at in the unit's text
}

// hasPrefix reports whether d is a prefix of the text from the restart point on, ctxTxt ‖
// ut[off:] (ut the unit's text): a window's text is one. The text is not stored whole, which
// would copy the rest of the unit at every restart point.
func (rs *restart) hasPrefix(ut, d string) bool {
	if len(d) <= len(rs.ctxTxt) {
		return strings.HasPrefix(rs.ctxTxt, d)
	}
	return strings.HasPrefix(d, rs.ctxTxt) && strings.HasPrefix(ut[rs.off:], d[len(rs.ctxTxt):])
}

// restartEvery is the spacing in tokens of the restart points New looks for in a unit: a cut
// then tokenizes at most about this many body tokens with the tail.
const restartEvery = 24

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
					// The plan keeps its own copy of head ‖ unit, not e4 (two more repeats).
					hu := slices.Clone(e4[:h+period])
					p.head, p.unit, p.headTxt, p.unitTxt = hu[:h], hu[h:], headUnit, ut
					p.anchor, p.periodic = ai, true
					p.restarts = b.restarts(p.unit, ut, p.unit[len(p.unit)-r:], ctxTxt, a)
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
	out := []restart{{at: 0, ctx: ctx0, ctxTxt: ctx0Txt, off: 0}}
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
					out = append(out, restart{at: k, ctx: cx, ctxTxt: cxTxt, off: off})
					prevCtx, prevTxt, prevAt, prevOff = cx, cxTxt, k, off
					break candidates
				}
			}
		}
	}
	return out
}
