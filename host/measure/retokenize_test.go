package measure

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/genload/genload/host/recording"
	"github.com/genload/genload/host/sse"
	"github.com/genload/genload/host/tokenizer"
)

// wordsSequence is a sequence whose text is the words' tokens under tok, streamed in chunks of
// 1–3 tokens (drawn from seed) 5 ms apart per token, with the exact total and no per-chunk
// counts (a server that gives only the request's usage); also each chunk's true token count.
func wordsSequence(t *testing.T, tok *tokenizer.Tokenizer, words string, seed uint64) (recording.Sequence, []int32) {
	t.Helper()
	ids := tok.Encode(words)
	rng := rand.New(rand.NewPCG(seed, 9))
	var s recording.Sequence
	var truth []int32
	for i := 0; i < len(ids); {
		n := min(1+rng.IntN(3), len(ids)-i)
		text := tok.Decode(ids[i:i+n], false)
		i += n
		s.Text = append(s.Text, text...)
		s.Marks.Append(sse.Mark{At: time.Second + time.Duration(i)*5*time.Millisecond, Text: int32(len(text)), Tokens: -1})
		truth = append(truth, int32(n))
	}
	s.TextBytes = len(s.Text)
	s.Finished, s.FinishReason, s.CompletionTokens, s.TokenSource = true, "length", len(ids), sse.TokensRequestUsage
	return s, truth
}

const someWords = " the river and the stone bridge were found under the silver morning light of the old harbor" +
	" where many people had made their history before the station engine signal"

// TestChunkCountsFromTheTokenizer: re-encoding a sequence's text recovers the tokens of each
// chunk of 1–3 tokens; a server count one off, or a chunk boundary inside a token, gives none.
func TestChunkCountsFromTheTokenizer(t *testing.T) {
	tok, err := tokenizer.Default()
	if err != nil {
		t.Fatal(err)
	}
	for seed := range uint64(10) {
		s, truth := wordsSequence(t, tok, someWords, seed)
		counts, why := chunkTokensByTokenizer(&s, tok)
		if why != RetokenizedExact || len(counts) != len(truth) {
			t.Fatalf("seed %d: %s, %d counts for %d chunks", seed, why, len(counts), len(truth))
		}
		for i := range truth {
			if counts[i] != truth[i] {
				t.Errorf("seed %d: chunk %d holds %d tokens, re-encoding says %d", seed, i, truth[i], counts[i])
			}
		}
		s.CompletionTokens++ // a server that counts a token with no text
		if c, why := chunkTokensByTokenizer(&s, tok); c != nil || why != RetokenizedCount {
			t.Errorf("seed %d: count one above the text's: %v %s", seed, c, why)
		}
	}
	// a chunk boundary inside a token: "river" split as "riv" | "er"
	s, _ := wordsSequence(t, tok, someWords, 1)
	s.Marks = sse.MarksOf()
	s.Text = []byte(" the riv")
	s.Marks.Append(sse.Mark{At: time.Second, Text: 8, Tokens: -1})
	s.Text = append(s.Text, "er"...)
	s.Marks.Append(sse.Mark{At: time.Second + 5*time.Millisecond, Text: 2, Tokens: -1})
	s.CompletionTokens = len(tok.Encode(" the river"))
	if c, why := chunkTokensByTokenizer(&s, tok); c != nil || why != RetokenizedBoundary {
		t.Errorf("boundary inside \" river\": %v %s", c, why)
	}
	// text not kept
	s.Text = nil
	if c, why := chunkTokensByTokenizer(&s, tok); c != nil || why != RetokenizedText {
		t.Errorf("no text: %v %s", c, why)
	}
}

// TestComputeWithTheTokenizer: with only exact totals and chunks of 1–3 tokens, fwd is absent
// (which chunk carried how many is unknown) until Options.Tokenizer gives the counts; then it
// is the true 5 ms per token, by every estimator, and the figures say it rests on the
// tokenizer.
func TestComputeWithTheTokenizer(t *testing.T) {
	tok, err := tokenizer.Default()
	if err != nil {
		t.Fatal(err)
	}
	res := &recording.Result{Requests: []recording.Request{{}}}
	for i := range 4 {
		s, _ := wordsSequence(t, tok, someWords, uint64(i))
		s.Index = i
		res.Sequences = append(res.Sequences, s)
	}
	maxTok := res.Sequences[0].CompletionTokens
	without := Compute(res, Options{MaxTokens: maxTok})
	if without.PerForward.N != 0 || !strings.Contains(without.PerForwardReason, "no per-chunk counts") {
		t.Errorf("without the tokenizer: fwd %+v, reason %q", without.PerForward, without.PerForwardReason)
	}
	with := Compute(res, Options{MaxTokens: maxTok, Tokenizer: tok})
	if with.PerForward.N != 4 || with.PerForward.Mean != 5*time.Millisecond || with.PerForwardCounts[CountsTokenizer] != 4 || with.Retokenized[RetokenizedExact] != 4 {
		t.Errorf("with the tokenizer: fwd %+v, counts %v, retokenized %v, reason %q", with.PerForward, with.PerForwardCounts, with.Retokenized, with.PerForwardReason)
	}
	if !with.Window.Valid || with.Window.PerStep != 5*time.Millisecond {
		t.Errorf("window %+v", with.Window)
	}
	// the forward indices count from the first chunk's last token: decode time / (tokens −
	// the first chunk's)
	if e := with.PerForwardEndpoints; e.N != 4 || e.Mean != 5*time.Millisecond {
		t.Errorf("with the tokenizer: endpoints %+v, want 4 × 5 ms", e)
	}
}

// TestServerTimings: llama.cpp's timings of a sequence of n tokens span its n − 1 forward
// passes after the first token; the figure divides by them, not by n.
func TestServerTimings(t *testing.T) {
	res := stream{B: 2, MaxTokens: 11, Step: 5 * time.Millisecond, Usage: "continuous"}.result()
	for i := range res.Sequences {
		res.Sequences[i].Timings, res.Sequences[i].HasTimings = sse.Timings{PredictedN: 11, PredictedMs: 50}, true
	}
	f := Compute(res, Options{})
	if st := f.ServerTimings; st == nil || st.PerForward.N != 2 || st.PerForward.Mean != 5*time.Millisecond || st.Reason != "" {
		t.Errorf("server timings %+v, want 2 × 5 ms", st)
	}
	if st := Compute(res, Options{ChunkForwards: true}).ServerTimings; st == nil || st.PerForward.N != 0 || !strings.Contains(st.Reason, "speculative") {
		t.Errorf("with chunk forwards: %+v", st)
	}
	res.Sequences[0].HasTimings, res.Sequences[1].HasTimings = false, false
	if st := Compute(res, Options{}).ServerTimings; st != nil {
		t.Errorf("without timings: %+v", st)
	}
}
