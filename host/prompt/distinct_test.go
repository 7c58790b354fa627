package prompt

import (
	"slices"
	"strings"
	"testing"
)

func TestTextStarts(t *testing.T) {
	text := "The ferry left. She (quietly) waved! \"Why?\" he asked.\n\nNext day came"
	sent, words := textStarts(text)
	at := func(offs []int) []string {
		var out []string
		for _, o := range offs {
			w := text[o:]
			if k := strings.IndexAny(w, " \n"); k > 0 {
				w = w[:k]
			}
			out = append(out, w)
		}
		return out
	}
	if got := at(sent); !slices.Equal(got, []string{"She", `"Why?"`, "he", "Next"}) {
		// "he" follows `"Why?"` and its closing quote: a sentence start by the rule.
		t.Errorf("sentence starts %q", got)
	}
	if got := at(words); !slices.Equal(got, []string{"ferry", "left.", "(quietly)", "waved!", "asked.", "day", "came"}) {
		t.Errorf("word starts %q", got)
	}
}

// Sources beyond the rows: the first R are the rows, then second sentences row by row; the
// count is the corpus's start points; texts are rotations of their row.
func TestSourcesAreRotationsOfTheRows(t *testing.T) {
	b, _, texts := qwen3Builder(t)
	R := b.Rows()
	if b.Source(10, 5) != 15 || b.Source(250, 10) != 4 || b.Source(0, R) != R || b.Source(99, R+7) != R+7 {
		t.Errorf("Source: %d %d %d %d", b.Source(10, 5), b.Source(250, 10), b.Source(0, R), b.Source(99, R+7))
	}
	// 5,160 sentence and 50,096 word starts, less the rows' first and the openings taken.
	if b.Sources() != R+45641 {
		t.Errorf("Sources() = %d, want %d rows + 45,641 rotations", b.Sources(), R)
	}
	first, _ := b.sourceText(R)
	s0, _ := textStarts(texts[0])
	if want := texts[0][s0[0]:]; !strings.HasPrefix(first, want) || !strings.HasSuffix(first, "\n\n"+strings.TrimRight(texts[0][:s0[0]], " \n")) {
		t.Errorf("source %d = %.60q…, want row 0 from its second sentence", R, first)
	}
	// Past Rows + E, cycle 1 prefixes a word.
	c1, desc := b.sourceText(b.Sources())
	if !strings.Contains(desc, "cycle 1") || !strings.HasSuffix(c1, first) || c1 == first {
		t.Errorf("cycle 1 source: %q, %.60q…", desc, c1)
	}
}

// A cell of 4,096 prompts — 16 times the corpus — has 4,096 distinct prompts that share no
// more than openingTokens (3) tokens of content with one another, and each prompt has exactly
// its length. (Their openings differ within 3 tokens as tokenized alone; after the chat
// template the tokenizer can merge one token more, so the bound is 3, not 2.)
// The longest shared prefix over every pair is found between neighbours in sorted order.
func TestCellsBeyondTheCorpusAreDistinctFromTheFirstToken(t *testing.T) {
	if testing.Short() {
		t.Skip("plans 3,840 rotations (about 10 s on 2 cores)")
	}
	b, _, _ := qwen3Builder(t)
	const B = 4096
	lens := make([]int, B)
	for i := range lens {
		lens[i] = 120 + i%97
	}
	ps, err := b.Build(17, lens)
	if err != nil {
		t.Fatal(err)
	}
	pre := len(b.Prefix())
	bodies := make([][]int32, B)
	for i, p := range ps {
		if len(p) != lens[i] {
			t.Fatalf("prompt %d: %d tokens, want %d", i, len(p), lens[i])
		}
		bodies[i] = p[pre:]
	}
	slices.SortFunc(bodies, slices.Compare)
	longest, at := 0, 0
	for i := 1; i < B; i++ {
		k := 0
		for k < len(bodies[i]) && k < len(bodies[i-1]) && bodies[i][k] == bodies[i-1][k] {
			k++
		}
		if k > longest {
			longest, at = k, i
		}
	}
	tok := b.codec
	t.Logf("longest shared prefix of %d prompts: %d tokens (%q)", B, longest, tok.Decode(bodies[at][:longest], false))
	if longest > openingTokens {
		t.Errorf("two prompts of the cell share %d tokens of content: %q", longest, tok.Decode(bodies[at][:longest], false))
	}
}

// Cells that fit the corpus are built as before: the first Rows prompts of any cell are the
// rows', the same ids whether or not the cell is larger.
func TestCellsWithinTheCorpusAreUnchanged(t *testing.T) {
	b, _, _ := qwen3Builder(t)
	lens := []int{300, 500, 800}
	small, err := b.Build(40, lens)
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range lens {
		p, err := b.One(40+i, n)
		if err != nil || !slices.Equal(p, small[i]) {
			t.Errorf("prompt %d differs from row %d's", i, 40+i)
		}
	}
}

func TestBlocksAreExactAndDistinct(t *testing.T) {
	b, tok, texts := qwen3Builder(t)
	r0, err := b.Block(3, 512)
	if err != nil || len(r0) != 512 {
		t.Fatalf("%d tokens, %v", len(r0), err)
	}
	if want := tok.Encode(texts[3] + "\n\n" + texts[3] + "\n\n" + texts[3]); !slices.Equal(r0[:200], want[:200]) {
		t.Error("block of row 3 is not the row's text repeated")
	}
	// Blocks of distinct sources open differently within their first openingTokens tokens.
	seen := map[string]int{}
	for q := 300; q < 400; q++ {
		blk, err := b.Block(q, 512)
		if err != nil || len(blk) != 512 {
			t.Fatalf("source %d: %d tokens, %v", q, len(blk), err)
		}
		k := string(int32Bytes(blk[:openingTokens]))
		if p, dup := seen[k]; dup {
			t.Errorf("sources %d and %d open with the same %d tokens", p, q, openingTokens)
		}
		seen[k] = q
	}
	if _, err := b.Block(-1, 5); err == nil {
		t.Error("source -1 accepted")
	}
}
