package measure

import (
	"sort"

	"github.com/genload/genload/host/recording"
)

// TokenEnder re-encodes generated text with the model's own tokenizer: the token ids of text
// and each token's end offset in bytes, ok false when the offsets do not add up to the text.
// host/tokenizer's *Tokenizer satisfies it (TokenEnds).
type TokenEnder interface {
	TokenEnds(text string) (ids []int32, ends []int, ok bool)
}

// Why re-encoding gave no per-chunk counts (the keys of Figures.Retokenized besides
// RetokenizedExact).
const (
	// RetokenizedExact: every chunk boundary fell on a token boundary of the re-encoded
	// text, every chunk held at least one token, and their sum equals the server's count.
	RetokenizedExact = "exact"
	// RetokenizedCount: the re-encoding has another number of tokens than the server
	// counted (the server's tokens are not the text's canonical encoding, or the server
	// counts a token that has no text, such as a stop token).
	RetokenizedCount = "count differs"
	// RetokenizedBoundary: a chunk boundary falls inside a token of the re-encoding, or a
	// chunk holds none.
	RetokenizedBoundary = "boundary inside a token"
	// RetokenizedText: the text was not kept whole (Sequence.Text short of the chunks'
	// bytes), or the tokenizer's offsets do not add up to it.
	RetokenizedText = "text unusable"
)

// chunkTokensByTokenizer derives s's per-chunk token counts from its text: the text is
// re-encoded with tok, each mark's chunk is the bytes of its text (Mark.Text) in order, and
// a chunk's count is the number of re-encoded tokens ending inside it. The counts are kept
// only when every chunk boundary is a token boundary, every chunk holds a token and they sum
// to the server's exact count (s.CompletionTokens, exactCount); otherwise counts is nil and
// why says which test failed (a Retokenized constant).
//
// A chunk's text is the detokenization of the tokens the server sent in it, so when the
// re-encoding equals the server's tokens the counts are exact; when it differs only inside
// chunks (another split of the same chunk text) they still are. The sum check catches a
// re-encoding with more or fewer tokens; what it cannot catch is one chunk re-encoded a token
// short and another a token long, which moves the forward index of the chunks between by one.
func chunkTokensByTokenizer(s *recording.Sequence, tok TokenEnder) (counts []int32, why string) {
	n := s.Marks.Len()
	total := 0
	for i := range n {
		total += int(s.Marks.Get(i).Text)
	}
	if len(s.Text) != total || total == 0 {
		return nil, RetokenizedText
	}
	_, ends, ok := tok.TokenEnds(string(s.Text))
	if !ok {
		return nil, RetokenizedText
	}
	if len(ends) != s.CompletionTokens {
		return nil, RetokenizedCount
	}
	counts = make([]int32, n)
	b, prev := 0, 0
	for i := range n {
		b += int(s.Marks.Get(i).Text)
		k := sort.SearchInts(ends, b) // tokens ending at or before b: ends[:k] < b, ends[k] == b if on a boundary
		if k == len(ends) || ends[k] != b {
			return nil, RetokenizedBoundary
		}
		counts[i] = int32(k + 1 - prev)
		if counts[i] < 1 {
			return nil, RetokenizedBoundary
		}
		prev = k + 1
	}
	return counts, RetokenizedExact
}
