package sse

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

var t0 = time.Unix(1000, 0)

// run demuxes the given read segments, the k-th read stamped at[k-1] ms after t0.
func run(t *testing.T, expect int, at []float64, parts ...string) (*Demux, error) {
	t.Helper()
	rd := NewReader(split(parts...), 0)
	rd.Now = schedClock(t0, at...)
	d := &Demux{KeepText: true}
	d.Reset(t0, expect)
	return d, d.Run(rd)
}

func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

func chunk(idx int, text string, finish string) string {
	fr := "null"
	if finish != "" {
		fr = `"` + finish + `"`
	}
	return `data: {"id":"cmpl-1","object":"text_completion","choices":[{"index":` + itoa(idx) +
		`,"text":"` + text + `","logprobs":null,"finish_reason":` + fr + `}]}` + "\n\n"
}

func itoa(i int) string { return strconv.Itoa(i) }

const usageChunk = `data: {"id":"cmpl-1","choices":[],"usage":{"prompt_tokens":12,"total_tokens":16,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":8}}}` + "\n\n"
const done = "data: [DONE]\n\n"

// A usage-only final chunk with "choices":[] is recorded as request usage and is not a
// token arrival.
func TestDemuxUsageOnlyChunk(t *testing.T) {
	d, err := run(t, 2, []float64{1, 2, 3, 4, 5},
		chunk(0, "a", ""), chunk(1, "b", ""), chunk(0, "c", "length")+chunk(1, "d", "length"), usageChunk, done)
	if err != nil {
		t.Fatal(err)
	}
	if !d.HasUsage || d.Usage.PromptTokens != 12 || d.Usage.CompletionTokens != 4 || !d.Usage.HasCached || d.Usage.CachedTokens != 8 {
		t.Fatalf("usage = %+v has=%v", d.Usage, d.HasUsage)
	}
	seqs := d.Finalize(2)
	// 2 marks each; the usage chunk (read 4) added none
	for i, s := range seqs {
		if s.Marks.Len() != 2 || !s.Finished || s.FinishReason != "length" {
			t.Fatalf("seq %d = %+v", i, s)
		}
		// usage 4 − 0 known = the 4 chunks with text: one token each
		if s.CompletionTokens != 2 || s.TokenSource != TokensUsageChunks {
			t.Fatalf("seq %d tokens %d from %s", i, s.CompletionTokens, s.TokenSource)
		}
	}
	if seqs[0].FinishAt != ms(3) || string(seqs[0].Text) != "ac" || string(seqs[1].Text) != "bd" {
		t.Fatalf("finish at %v, texts %q %q", seqs[0].FinishAt, seqs[0].Text, seqs[1].Text)
	}
	if !d.Done {
		t.Fatal("[DONE] not recorded")
	}
}

// A read boundary right after "data:" and before ` {"choices":…" " a  b"…` keeps the
// leading and double spaces of the text.
func TestDemuxBoundaryAfterColon(t *testing.T) {
	d, err := run(t, 1, []float64{1, 2, 3},
		"data:", ` {"choices":[{"index":0,"text":" a  b","finish_reason":"length"}]}`+"\n\n", done)
	if err != nil {
		t.Fatal(err)
	}
	if s := d.Finalize(1)[0]; string(s.Text) != " a  b" {
		t.Fatalf("text = %q", s.Text)
	}
}

// The three bytes of 中 (E4 B8 AD) split across two reads inside the JSON string.
func TestDemuxSplitUTF8(t *testing.T) {
	full := chunk(0, "中", "length")
	cut := strings.Index(full, "中") + 1 // after the first byte
	d, err := run(t, 1, []float64{1, 2, 3}, full[:cut], full[cut:], done)
	if err != nil {
		t.Fatal(err)
	}
	s := d.Finalize(1)[0]
	if string(s.Text) != "中" || strings.ContainsRune(string(s.Text), '\uFFFD') {
		t.Fatalf("text = %q", s.Text)
	}
}

// Comments, id/retry lines and empty events, including a comment arriving while the
// stream is idle, never count as a token arrival: the first mark is the first text.
func TestDemuxIgnoredLinesNeverFirstToken(t *testing.T) {
	d, err := run(t, 1, []float64{5, 100, 150, 200, 250},
		": ping\n\n",
		"id: 1\nretry: 100\n\n",
		"\n\n: keep-alive\n",
		chunk(0, "x", ""),
		chunk(0, "y", "length")+done)
	if err != nil {
		t.Fatal(err)
	}
	s := d.Finalize(2)[0]
	if s.Marks.Len() != 2 || s.Marks.Get(0).At != ms(200) || s.Marks.Get(1).At != ms(250) {
		t.Fatalf("marks = %+v, want at 200 and 250 ms", s.Marks.Slice())
	}
}

// A first chunk with empty text at 5 ms, then tokens at 214 and 234 ms: marks only at
// 214 and 234 ms (so TTFT = 214 ms and one ITL of 20 ms in measure).
func TestDemuxEmptyFirstChunk(t *testing.T) {
	d, err := run(t, 1, []float64{5, 214, 234, 240},
		chunk(0, "", ""), chunk(0, "a", ""), chunk(0, "b", "length"), done)
	if err != nil {
		t.Fatal(err)
	}
	s := d.Finalize(2)[0]
	if s.Marks.Len() != 2 || s.Marks.Get(0).At != ms(214) || s.Marks.Get(1).At != ms(234) || s.Chunks != 3 {
		t.Fatalf("marks = %+v chunks %d", s.Marks.Slice(), s.Chunks)
	}
}

// Continuous usage 1, 6, 7 at 100, 140, 180 ms gives token deltas 1, 5, 1 and a
// per-choice count of 7.
func TestDemuxContinuousUsageDeltas(t *testing.T) {
	cu := func(text string, n int, fin string) string {
		fr := "null"
		if fin != "" {
			fr = `"` + fin + `"`
		}
		return `data: {"choices":[{"index":0,"text":"` + text + `","finish_reason":` + fr + `}],"usage":{"prompt_tokens":3,"completion_tokens":` +
			string(rune('0'+n)) + `,"total_tokens":10}}` + "\n\n"
	}
	d, err := run(t, 1, []float64{100, 140, 180, 190},
		cu("a", 1, ""), cu("bcdef", 6, ""), cu("g", 7, "length"), done)
	if err != nil {
		t.Fatal(err)
	}
	s := d.Finalize(7)[0]
	want := []Mark{{ms(100), 1, 1}, {ms(140), 5, 5}, {ms(180), 1, 1}}
	if s.Marks.Len() != 3 {
		t.Fatalf("marks %+v", s.Marks.Slice())
	}
	for i := range want {
		if s.Marks.Get(i) != want[i] {
			t.Fatalf("mark %d = %+v, want %+v", i, s.Marks.Get(i), want[i])
		}
	}
	if s.CompletionTokens != 7 || s.TokenSource != TokensChoiceUsage {
		t.Fatalf("tokens %d from %s", s.CompletionTokens, s.TokenSource)
	}
}

// TGI and llama.cpp put usage only on each prompt's final chunk: the count is exact, but
// the final chunk's delta is unknown (earlier chunks had no usage), and llama.cpp's
// `text:""` final chunk is not a mark.
func TestDemuxFinalChunkUsage(t *testing.T) {
	tgiFinal := `data: {"id":"","choices":[{"index":0,"text":"c","finish_reason":"length"}],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}` + "\n\n"
	llamaFinal := `data: {"choices":[{"index":0,"text":"","finish_reason":"length"}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7,"prompt_tokens_details":{"cached_tokens":0}}}` + "\n\n"
	tgiPartial := `data: {"id":"","choices":[{"index":0,"text":"a","finish_reason":""}]}` + "\n\n"
	cases := []struct {
		name   string
		parts  []string
		marks  int
		tokens int
	}{
		{"tgi", []string{tgiPartial, tgiPartial, tgiFinal, done}, 3, 3},
		{"llama.cpp without [DONE]", []string{chunk(0, "a", ""), chunk(0, "b", ""), llamaFinal}, 2, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, err := run(t, 1, []float64{1, 2, 3, 4}, tc.parts...)
			if err != nil {
				t.Fatal(err)
			}
			s := d.Finalize(3)[0]
			if s.Marks.Len() != tc.marks || s.CompletionTokens != tc.tokens || s.TokenSource != TokensChoiceUsage {
				t.Fatalf("marks %+v tokens %d %s", s.Marks.Slice(), s.CompletionTokens, s.TokenSource)
			}
			if last := s.Marks.Get(s.Marks.Len() - 1); last.Tokens != -1 {
				t.Fatalf("last mark delta %d, want -1 (unknown)", last.Tokens)
			}
			u, ok := d.RequestUsage()
			if !ok || u.CompletionTokens != tc.tokens {
				t.Fatalf("request usage %+v %v", u, ok)
			}
		})
	}
}

// In-stream errors with HTTP 200, in each server's shape, after tokens or as the first
// event: the stream fails with the server's message.
func TestDemuxInStreamErrors(t *testing.T) {
	shapes := []struct {
		name, event, msg, typ string
		code                  int
	}{
		{"vllm", `{"error":{"message":"boom v","type":"BadRequestError","param":null,"code":400}}`, "boom v", "BadRequestError", 400},
		{"sglang", `{"error":{"object":"error","message":"The request queue is full.","type":"SERVICE_UNAVAILABLE","param":null,"code":503}}`, "The request queue is full.", "SERVICE_UNAVAILABLE", 503},
		{"llama.cpp", `{"error":{"code":500,"message":"boom l","type":"server_error"}}`, "boom l", "server_error", 500},
		{"tgi", `{"error":{"message":"Input validation error","http_status_code":422}}`, "Input validation error", "", 422},
		{"flat sglang", `{"object":"error","message":"flat boom","type":"x","param":null,"code":400}`, "flat boom", "x", 400},
		{"tgi string", `{"error":"Model is overloaded","error_type":"overloaded"}`, "Model is overloaded", "overloaded", 0},
	}
	for _, sh := range shapes {
		for _, after := range []bool{false, true} {
			name := sh.name + "/first"
			parts := []string{}
			if after {
				name = sh.name + "/after tokens"
				parts = append(parts, chunk(0, "a", ""), chunk(0, "b", ""))
			}
			parts = append(parts, "data: "+sh.event+"\n\n", done)
			t.Run(name, func(t *testing.T) {
				_, err := run(t, 1, []float64{1, 2, 3, 4}, parts...)
				var se *ServerError
				if !errors.As(err, &se) {
					t.Fatalf("err = %v, want *ServerError", err)
				}
				if se.Message != sh.msg || se.Type != sh.typ || se.Code != sh.code {
					t.Fatalf("got %+v, want message %q type %q code %d", se, sh.msg, sh.typ, sh.code)
				}
				if !strings.Contains(err.Error(), sh.msg) {
					t.Fatalf("error text %q lacks the message", err)
				}
			})
		}
	}
}

// A stream that ends without [DONE] after a complete finish chunk succeeds; one cut
// mid-event fails with "stream truncated"; one ending cleanly before the finish fails too.
func TestDemuxEndings(t *testing.T) {
	cases := []struct {
		name  string
		parts []string
		ok    bool
	}{
		{"finish then EOF", []string{chunk(0, "a", ""), chunk(0, "b", "length")}, true},
		{"finish, usage, [DONE]", []string{chunk(0, "b", "length"), usageChunk, done}, true},
		{"cut mid-event", []string{chunk(0, "a", ""), `data: {"choices":[{"index":0,"te`}, false},
		{"clean EOF before finish", []string{chunk(0, "a", "")}, false},
		{"[DONE] before finish", []string{chunk(0, "a", ""), done}, false},
		{"empty stream", nil, false},
		// [DONE] written with two spaces after the colon (one is the field separator)
		{"finish, [DONE] after two spaces", []string{chunk(0, "b", "length"), "data:  [DONE]\n\n"}, true},
		{"finish, [DONE] with trailing space", []string{chunk(0, "b", "length"), "data: [DONE] \r\n\r\n"}, true},
		// a final [DONE] whose blank line (or whole line end) never came
		{"finish, [DONE] without its blank line", []string{chunk(0, "b", "length"), "data: [DONE]\n"}, true},
		{"finish, [DONE] without a line end", []string{chunk(0, "b", "length"), usageChunk, "data: [DONE]"}, true},
		{"[DONE] without its blank line before finish", []string{chunk(0, "a", ""), "data: [DONE]\n"}, false},
		{"unterminated chunk after finish", []string{chunk(0, "b", "length"), `data: {"choices":[]}`}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := run(t, 1, []float64{1, 2, 3, 4}, tc.parts...)
			if tc.ok != (err == nil) {
				t.Fatalf("err = %v, want ok=%v", err, tc.ok)
			}
			if !tc.ok && !strings.Contains(err.Error(), "stream truncated") {
				t.Fatalf("message %q lacks \"stream truncated\"", err)
			}
		})
	}
}

// Choices interleave and are keyed on index, not on the (varying, empty) id; unknown
// fields and logprobs shapes are ignored.
func TestDemuxInterleavedIndices(t *testing.T) {
	parts := []string{
		`data: {"id":"a","choices":[{"index":2,"text":"z","logprobs":{"content":[{"id":1}]},"finish_reason":null,"matched_stop":null}],"usage":null}` + "\n\n",
		`data: {"id":"b","choices":[{"index":0,"text":"x","finish_reason":"length"},{"index":1,"text":"y","finish_reason":"length"}]}` + "\n\n",
		`data: {"id":"","choices":[{"index":2,"text":"w","finish_reason":"stop","stop_reason":null}],"metadata":{"weight_version":"1"}}` + "\n\n",
		done,
	}
	d, err := run(t, 3, []float64{1, 2, 3, 4}, parts...)
	if err != nil {
		t.Fatal(err)
	}
	seqs := d.Finalize(0)
	got := string(seqs[0].Text) + string(seqs[1].Text) + string(seqs[2].Text)
	if got != "xyzw" || seqs[2].FinishReason != "stop" || seqs[1].Marks.Len() != 1 || seqs[1].Marks.Get(0).At != ms(2) {
		t.Fatalf("texts %q, seqs %+v", got, seqs)
	}
	// no usage at all → counts from chunks
	if seqs[2].CompletionTokens != 2 || seqs[2].TokenSource != TokensChunks {
		t.Fatalf("seq 2 tokens %d %s", seqs[2].CompletionTokens, seqs[2].TokenSource)
	}
}

func TestDemuxMalformed(t *testing.T) {
	cases := []string{
		"data: {not json}\n\n",
		"data: [1,2]\n\n",
		`data: {"choices":{"index":0}}` + "\n\n",
		`data: {"choices":[{"index":-1,"text":"a"}]}` + "\n\n",
		`data: {"choices":[{"index":70000,"text":"a"}]}` + "\n\n",
	}
	for _, c := range cases {
		if _, err := run(t, 1, []float64{1, 2}, c, done); !errors.Is(err, ErrMalformed) {
			t.Errorf("%q: no error", c)
		}
	}
}

func TestParseError(t *testing.T) {
	cases := []struct{ body, want string }{
		{`{"error":{"message":"The model ` + "`x`" + ` does not exist.","type":"NotFoundError","param":"model","code":404}}`, "The model `x` does not exist."},
		{`{"object":"error","message":"The input (9 tokens) is longer than the model's context length (8 tokens).","type":"BadRequest","param":null,"code":400}`, "The input (9 tokens) is longer than the model's context length (8 tokens)."},
		{`{"error":"Model is overloaded","error_type":"overloaded"}`, "Model is overloaded"},
		{`Internal Server Error`, "Internal Server Error"},
	}
	for _, c := range cases {
		if got := ParseError([]byte(c.body)).Message; got != c.want {
			t.Errorf("ParseError(%s) = %q, want %q", c.body, got, c.want)
		}
	}
}
