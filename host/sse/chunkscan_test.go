package sse

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// refDecode is the reference: the fastjson path alone, as Decode was before the scanner.
func refDecode(d *Decoder, data []byte) (*Chunk, error) {
	d.resetChunk()
	if string(data) == "[DONE]" {
		d.chunk.Done = true
		return &d.chunk, nil
	}
	return d.decodeFastjson(data)
}

// render prints a decode result compactly: "error", "server error: <msg> (<type>, <code>)",
// or the choices as index:text/finish (nil shown as ∅; " lpN" when the logprobs list N
// tokens) and the usage when present.
func render(c *Chunk, err error) string {
	if err != nil {
		return "error"
	}
	if c.Done {
		return "done"
	}
	if c.Err != nil {
		return fmt.Sprintf("server error: %s|%s|%d", c.Err.Message, c.Err.Type, c.Err.Code)
	}
	var sb strings.Builder
	q := func(b []byte) string {
		if b == nil {
			return "∅"
		}
		return fmt.Sprintf("%q", b)
	}
	for _, ch := range c.Choices {
		lp := ""
		if ch.HasLogprobs {
			lp = fmt.Sprintf(" lp%d", ch.Logprobs)
		}
		fmt.Fprintf(&sb, "[%d:%s/%s%s]", ch.Index, q(ch.Text), q(ch.FinishReason), lp)
	}
	if c.HasUsage {
		u := c.Usage
		fmt.Fprintf(&sb, " usage %d+%d=%d", u.PromptTokens, u.CompletionTokens, u.TotalTokens)
		if u.HasCached {
			fmt.Fprintf(&sb, " cached %d", u.CachedTokens)
		}
	}
	return sb.String()
}

// diffChunks returns "" when both results are identical field by field (nil-ness of the
// byte slices included, and the same error text), else a description.
func diffChunks(got *Chunk, gerr error, want *Chunk, werr error) string {
	if (gerr != nil) != (werr != nil) {
		return fmt.Sprintf("error %v, want %v", gerr, werr)
	}
	if gerr != nil {
		if gerr.Error() != werr.Error() {
			return fmt.Sprintf("error %q, want %q", gerr, werr)
		}
		return ""
	}
	if got.Done != want.Done || got.HasUsage != want.HasUsage || got.Usage != want.Usage || len(got.Choices) != len(want.Choices) {
		return fmt.Sprintf("got %s, want %s", render(got, nil), render(want, nil))
	}
	if (got.Err == nil) != (want.Err == nil) || got.Err != nil && *got.Err != *want.Err {
		return fmt.Sprintf("server error %+v, want %+v", got.Err, want.Err)
	}
	for i := range got.Choices {
		g, w := got.Choices[i], want.Choices[i]
		if g.Index != w.Index || g.Finished != w.Finished || g.Logprobs != w.Logprobs || g.HasLogprobs != w.HasLogprobs ||
			!bytes.Equal(g.Text, w.Text) || (g.Text == nil) != (w.Text == nil) ||
			!bytes.Equal(g.FinishReason, w.FinishReason) || (g.FinishReason == nil) != (w.FinishReason == nil) {
			return fmt.Sprintf("choice %d: got %+v, want %+v", i, g, w)
		}
	}
	return ""
}

// warmup is decoded first by both decoders of a comparison so that the second decode
// reuses a dirty Choices slice and text buffer.
var warmup = []byte(`{"choices":[{"index":7,"text":"w\u00e9x","finish_reason":"stop"},{"index":8,"text":"yy"}],"usage":{"prompt_tokens":1,"prompt_tokens_details":{"cached_tokens":1}}}`)

// checkSame decodes data with Decode (scanner + fallback) and with the fastjson path and
// fails on any difference; it returns the result rendered and whether the scanner alone
// accepted data.
func checkSame(t *testing.T, data []byte) (string, bool) {
	t.Helper()
	orig := bytes.Clone(data)
	var fast, ref Decoder
	_, _ = fast.Decode(warmup)
	_, _ = refDecode(&ref, warmup)
	got, gerr := fast.Decode(data)
	want, werr := refDecode(&ref, data)
	if d := diffChunks(got, gerr, want, werr); d != "" {
		t.Fatalf("Decode(%q) differs from fastjson: %s", data, d)
	}
	if !bytes.Equal(data, orig) {
		t.Fatalf("Decode modified its input: %q → %q", orig, data)
	}
	var probe Decoder
	probe.resetChunk()
	return render(want, werr), probe.scanChunk(data)
}

// Every real engine chunk but the error events is taken by the scanner (the point of it),
// with the same result as fastjson.
func TestScanEngineChunks(t *testing.T) {
	for _, s := range append(append([]string(nil), engineChunks...), logprobsChunks...) {
		got, fast := checkSame(t, []byte(s))
		isErr := strings.HasPrefix(got, "server error")
		if fast == isErr {
			t.Errorf("scanner took=%v for %s → %s", fast, s, got)
		}
	}
}

func TestScanCases(t *testing.T) {
	const (
		pre  = `{"id":"x","object":"text_completion","choices":[{"index":0,"text":`
		post = `,"finish_reason":null}]}`
	)
	text := func(s string) string { return pre + s + post }
	deep := `{"logprobs":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `,"choices":[{"index":1,"text":"d"}]}`
	cases := []struct {
		name string
		in   string
		want string // render of the result
		fast bool   // taken by the scanner (else by fastjson)
	}{
		{"vllm token", text(`" tok"`), `[0:" tok"/∅]`, true},
		{"simple escapes", text(`"a\"b\\c\/d\b\f\n\r\t"`), `[0:"a\"b\\c/d\b\f\n\r\t"/∅]`, true},
		// é is U+00E9 (C3 A9), 中 is U+4E2D (E4 B8 AD)
		{"\\u BMP", text(`"\u00e9\u4E2D"`), `[0:"é中"/∅]`, true},
		{"\\u0000 is a NUL byte", text(`"a\u0000b"`), `[0:"a\x00b"/∅]`, true},
		// U+1F600 = D83D DE00 → F0 9F 98 80
		{"surrogate pair", text(`"\ud83d\ude00!"`), `[0:"😀!"/∅]`, true},
		// fastjson keeps a surrogate that has no \uXXXX after it as the 6 bytes "\ud83d"
		{"lone high surrogate at end", text(`"x\ud83d"`), `[0:"x\\ud83d"/∅]`, true},
		{"high surrogate then char", text(`"\ud83dx"`), `[0:"\\ud83dx"/∅]`, true},
		// a surrogate then a valid non-low \uXXXX: DecodeRune gives U+FFFD and both go
		{"high surrogate then BMP escape", text(`"\ud83d\u0041B"`), "[0:\"\uFFFDB\"/∅]", true},
		{"lone low surrogate then escape", text(`"\ude00\ud83d"`), "[0:\"\uFFFD\"/∅]", true},
		{"surrogate then bad hex", text(`"\ud83d\u12G4"`), `[0:"\\ud83d\\u12G4"/∅]`, true},
		{"bad hex kept", text(`"\u12G4"`), `[0:"\\u12G4"/∅]`, true},
		{"short \\u kept", text(`"ab\u12"`), `[0:"ab\\u12"/∅]`, true},
		{"unknown escape kept", text(`"\x\'"`), `[0:"\\x\\'"/∅]`, true},
		{"escaped backslash before quote", text(`"a\\"`), `[0:"a\\"/∅]`, true},
		{"escaped quote after escaped backslash", text(`"a\\\"b"`), `[0:"a\\\"b"/∅]`, true},
		{"raw control and invalid UTF-8 bytes copied", text("\"\x01\xff\t\""), `[0:"\x01\xff\t"/∅]`, true},
		{"empty text", text(`""`), `[0:""/∅]`, true},
		{"null text", text(`null`), `[0:∅/∅]`, true},
		{"number text", text(`5`), `[0:∅/∅]`, true},
		{"finish length", `{"choices":[{"index":2,"text":"","finish_reason":"length"}]}`, `[2:""/"length"]`, true},
		{"TGI empty finish is not finished", `{"choices":[{"index":0,"text":"v","finish_reason":""}]}`, `[0:"v"/∅]`, true},
		{"escaped finish", `{"choices":[{"text":"v","finish_reason":"\u006cength"}]}`, `[0:"v"/"length"]`, true},
		{"missing index is 0", `{"choices":[{"text":"v"}]}`, `[0:"v"/∅]`, true},
		{"two choices, whitespace everywhere", " \r\n{ \"choices\" : [ { \"index\" : 3 , \"text\" : \"a\" } ,\t{\"index\":4,\"text\":\"b\",\"finish_reason\":\"stop\"} ] } \n", `[3:"a"/∅][4:"b"/"stop"]`, true},
		{"18-digit index", `{"choices":[{"index":123456789012345678}]}`, `[123456789012345678:∅/∅]`, true},
		{"nested skipped values with tricky strings", `{"logprobs":{"tokens":["}\"]",",{"],"k\"ey":[[],{},[{"a":[true,false,null,-1.5e+3]}]]},"choices":[{"index":0,"text":"t","logprobs":{"top":[{"x":1}]}}]}`, `[0:"t"/∅]`, true},
		{"choices null", `{"choices":null,"usage":null}`, ``, true},
		{"error null is no error", `{"error":null,"choices":[{"index":1,"text":"a"}]}`, `[1:"a"/∅]`, true},
		{"object other than error", `{"object":"text_completion","choices":[]}`, ``, true},
		{"empty object", `{}`, ``, true},
		{"usage chunk", `{"choices":[],"usage":{"prompt_tokens":12,"total_tokens":20,"completion_tokens":8}}`, ` usage 12+8=20`, true},
		{"usage cached", `{"usage":{"prompt_tokens":3,"prompt_tokens_details":{"audio":null,"cached_tokens":2},"reasoning_tokens":0}}`, ` usage 3+0=0 cached 2`, true},
		{"usage details null", `{"usage":{"prompt_tokens":3,"prompt_tokens_details":null}}`, ` usage 3+0=0`, true},
		{"usage details array", `{"usage":{"prompt_tokens_details":[1]}}`, ` usage 0+0=0`, true},
		{"usage cached null", `{"usage":{"prompt_tokens_details":{"cached_tokens":null}}}`, ` usage 0+0=0`, true},
		{"usage string count reads 0", `{"usage":{"prompt_tokens":"3"}}`, ` usage 0+0=0`, true},
		{"usage null", `{"choices":[],"usage":null}`, ``, true},
		{"usage not an object", `{"usage":[1,2]}`, ``, true},
		{"llama.cpp final chunk", `{"choices":[{"index":0,"text":"","logprobs":null,"finish_reason":"length"}],"usage":{"prompt_tokens":3,"total_tokens":5,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":0}},"timings":{"cache_n":0,"prompt_ms":1.250}}`, `[0:""/"length"] usage 3+2=5 cached 0`, true},

		// logprobs: the number of tokens listed (tokens, else content)
		{"vllm legacy logprobs, one token", text(`" tok"`)[:len(text(`" tok"`))-len(post)] + `,"logprobs":{"text_offset":[412],"token_logprobs":[-0.313],"tokens":[" tok"],"top_logprobs":[{" tok":-0.313}]},"finish_reason":null}]}`, `[0:" tok"/∅ lp1]`, true},
		{"vllm legacy logprobs, three tokens", `{"choices":[{"index":1,"text":"abc","logprobs":{"tokens":["a","b","c"],"token_logprobs":[-1,-2.5e-3,0],"top_logprobs":[{"a":-1},{"b\u00e9\"":-2},null],"text_offset":[0,1,2]}}]}`, `[1:"abc"/∅ lp3]`, true},
		{"stripped EOS: empty text, one token", `{"choices":[{"index":0,"text":"","logprobs":{"tokens":["</s>"]},"finish_reason":"stop"}]}`, `[0:""/"stop" lp1]`, true},
		{"empty tokens array", `{"choices":[{"text":"","logprobs":{"tokens":[]}}]}`, `[0:""/∅ lp0]`, true},
		{"llama.cpp content form", `{"choices":[{"index":0,"text":" tok","logprobs":{"content":[{"id":1234,"token":" tok","bytes":[32,116,111,107],"logprob":-0.31,"top_logprobs":[{"id":1234,"token":" tok","bytes":[32,116,111,107],"logprob":-0.31}]}]},"finish_reason":null}]}`, `[0:" tok"/∅ lp1]`, true},
		{"tokens wins over content", `{"choices":[{"logprobs":{"content":[1,2],"tokens":[1]}}]}`, `[0:∅/∅ lp1]`, true},
		{"tokens not an array: content", `{"choices":[{"logprobs":{"tokens":{"a":[1,2,3]},"content":[1,2]}}]}`, `[0:∅/∅ lp2]`, true},
		{"logprobs without either array", `{"choices":[{"text":"a","logprobs":{"token_logprobs":[-1],"top_logprobs":[{"a":-1}]}}]}`, `[0:"a"/∅]`, true},
		{"logprobs null", `{"choices":[{"text":"a","logprobs":null}]}`, `[0:"a"/∅]`, true},
		{"logprobs an array", `{"choices":[{"text":"a","logprobs":[["tokens"]]}]}`, `[0:"a"/∅]`, true},
		{"top-level logprobs are not a choice's", `{"logprobs":{"tokens":[1]},"choices":[{"text":"a"}]}`, `[0:"a"/∅]`, true},
		{"escaped keys deeper than the counted array", `{"choices":[{"logprobs":{"tokens":[{"k\u0065y":1}],"top_logprobs":[{"\n":-1}]}}]}`, `[0:∅/∅ lp1]`, true},

		// fallbacks: same result, decided by fastjson
		{"duplicate text: first wins", `{"choices":[{"text":"a","text":"b"}]}`, `[0:"a"/∅]`, false},
		{"duplicate choices: first wins", `{"choices":[{"text":"a"}],"choices":[{"text":"b"}]}`, `[0:"a"/∅]`, false},
		{"duplicate usage key: first wins", `{"usage":{"prompt_tokens":1,"prompt_tokens":2}}`, ` usage 1+0=0`, false},
		{"escaped key matches text", `{"choices":[{"t\u0065xt":"a"}]}`, `[0:"a"/∅]`, false},
		{"escaped top-level key matches choices", `{"ch\u006fices":[{"text":"a"}]}`, `[0:"a"/∅]`, false},
		{"19-digit index", `{"choices":[{"index":9223372036854775807}]}`, `[9223372036854775807:∅/∅]`, false},
		{"index with leading zero", `{"choices":[{"index":01}]}`, `[1:∅/∅]`, false},
		{"float index", `{"choices":[{"index":1.0}]}`, `error`, false},
		{"negative index", `{"choices":[{"index":-1}]}`, `error`, false},
		{"string index", `{"choices":[{"index":"1"}]}`, `error`, false},
		{"cached float: has, 0", `{"usage":{"prompt_tokens_details":{"cached_tokens":1.5}}}`, ` usage 0+0=0 cached 0`, false},
		{"negative usage", `{"usage":{"completion_tokens":-2}}`, ` usage 0+-2=0`, false},
		{"duplicate logprobs: first wins", `{"choices":[{"logprobs":{"tokens":[1]},"logprobs":{"tokens":[1,2]}}]}`, `[0:∅/∅ lp1]`, false},
		{"duplicate tokens: first wins", `{"choices":[{"logprobs":{"tokens":{},"tokens":[1,2]}}]}`, `[0:∅/∅]`, false},
		{"escaped tokens key", `{"choices":[{"logprobs":{"t\u006fkens":[1,2]}}]}`, `[0:∅/∅ lp2]`, false},
		{"malformed tokens array", `{"choices":[{"logprobs":{"tokens":[1,]}}]}`, `error`, false},
		{"NaN in a skipped field", `{"created":NaN,"choices":[{"text":"a"}]}`, `[0:"a"/∅]`, false},
		{"nesting deeper than the scanner's limit", deep, `[1:"d"/∅]`, false},
		{"server error", `{"error":{"message":"m","type":"t","code":500}}`, `server error: m|t|500`, false},
		{"error after choices", `{"choices":[{"text":"a"}],"error":"boom"}`, `server error: boom||0`, false},
		{"flat object error", `{"object":"error","message":"too long","code":400}`, `server error: too long||400`, false},
		{"escaped object error", `{"object":"\u0065rror","message":"m"}`, `server error: m||0`, false},
		{"trailing garbage", text(`"a"`) + ` x`, `error`, false},
		{"trailing comma", `{"choices":[],}`, `error`, false},
		{"unterminated string", `{"choices":[{"text":"a}]}`, `error`, false},
		{"not an object", `[{"text":"a"}]`, `error`, false},
		{"choices not an array", `{"choices":{"text":"a"}}`, `error`, false},
		{"choice not an object", `{"choices":["a"]}`, `error`, false},
		{"missing colon", `{"choices" []}`, `error`, false},
		// fastjson rejects a number token that is a lone sign (found by the fuzzer)
		{"lone sign", `{"usage":+}`, `error`, false},
		{"lone minus in a skipped array", `{"x":[-],"choices":[]}`, `error`, false},
		{"sign run is a number to fastjson", `{"x":--,"choices":[]}`, ``, true},
		{"bad literal", `{"x":tru,"choices":[]}`, `error`, false},
		{"empty", ``, `error`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, fast := checkSame(t, []byte(tc.in))
			if got != tc.want {
				t.Errorf("result %s, want %s", got, tc.want)
			}
			if fast != tc.fast {
				t.Errorf("scanner took it = %v, want %v", fast, tc.fast)
			}
		})
	}
}

// The slices of a Chunk stay valid until the next Decode even when the caller reuses the
// event bytes (as the Reader does for the next event).
func TestScanTextOutlivesInput(t *testing.T) {
	var d Decoder
	data := []byte(`{"choices":[{"index":0,"text":"abc","finish_reason":"stop"}]}`)
	c, err := d.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	for i := range data {
		data[i] = 'z'
	}
	if string(c.Choices[0].Text) != "abc" || string(c.Choices[0].FinishReason) != "stop" {
		t.Fatalf("text %q finish %q after overwriting the input", c.Choices[0].Text, c.Choices[0].FinishReason)
	}
}

// In the steady state the scanner allocates nothing, escapes included.
func TestScanNoAllocs(t *testing.T) {
	var d Decoder
	data := []byte(`{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" caf\u00e9 \ud83d\ude00","logprobs":null,"finish_reason":null}]}`)
	if _, err := d.Decode(data); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = d.Decode(data) }); n != 0 {
		t.Fatalf("%v allocations per Decode, want 0", n)
	}
}

// FuzzDecodeFastVsFastjson: for any event bytes, Decode (scanner, falling back to
// fastjson) gives exactly the fastjson path's result — same choices (index, text,
// finish reason, nil-ness), usage, server error, or the same error — and leaves its input
// unchanged.
func FuzzDecodeFastVsFastjson(f *testing.F) {
	for _, s := range engineChunks {
		f.Add([]byte(s))
	}
	for _, s := range logprobsChunks {
		f.Add([]byte(s))
	}
	for _, s := range fuzzSeeds {
		if i := strings.Index(s, "data: {"); i >= 0 {
			if j := strings.Index(s[i:], "\n"); j > 0 {
				f.Add([]byte(s[i+6 : i+j]))
			}
		}
	}
	for _, s := range []string{
		`{"choices":[{"index":0,"text":"a\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00\ud83d\u0041\ud83dx\u12G4\x","finish_reason":"\u006cength"}]}`,
		`{"choices":[{"t\u0065xt":"a","text":"b"}],"usage":{"prompt_tokens":1,"prompt_tokens_details":{"cached_tokens":1.5}}}`,
		`{"object":"error","message":"m"}`,
		` {"logprobs":[[{"a":"}"}]],"choices":null,"error":null} `,
		`{"choices":[{"index":01,"text":null,"finish_reason":""}],"usage":{"total_tokens":-1}}`,
		`{"choices":[{"logprobs":{"t\u006fkens":[1],"tokens":{},"content":[[],{"x":[1,{}]}]}},{"logprobs":{"tokens":[ ]},"logprobs":null}]}`,
		`{"choices":[{"text":"a","logprobs":{"content":[{"top_logprobs":[{"b\"":-1e400}]}],"tokens":null}}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkSame(t, data)
	})
}

// BenchmarkDecode compares Decode (scanner) with the fastjson path on one vLLM-shaped
// token chunk (the ~165-byte shape of BenchmarkParse).
func BenchmarkDecode(b *testing.B) {
	data := []byte(`{"id":"cmpl-bench","object":"text_completion","created":1767000000,"model":"m","choices":[{"index":0,"text":" tok17","logprobs":null,"finish_reason":null}]}`)
	b.Run("scanner", func(b *testing.B) {
		var d Decoder
		b.ReportAllocs()
		for range b.N {
			if _, err := d.Decode(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fastjson", func(b *testing.B) {
		var d Decoder
		b.ReportAllocs()
		for range b.N {
			if _, err := refDecode(&d, data); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// FuzzDecodeTextEscapes focuses the differential check on string unescaping: the fuzzed
// bytes are placed verbatim inside the text and finish_reason strings of a vLLM chunk (so
// most inputs stay valid JSON and reach the scanner's unescaper).
func FuzzDecodeTextEscapes(f *testing.F) {
	for _, s := range [][2]string{
		{` tok`, `length`},
		{`a\"b\\c\/d\b\f\n\r\t`, `\u006cength`},
		{`\ud83d\ude00\ud83d\u0041\ud83dx\ude00\ud83d`, ``},
		{`\u12G4\u12\x\`, `\`},
		{"\x00\xff\xc3", `\\`},
	} {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, text, finish []byte) {
		data := `{"id":"cmpl-1","object":"text_completion","choices":[{"index":0,"text":"` + string(text) +
			`","logprobs":null,"finish_reason":"` + string(finish) + `"}]}`
		checkSame(t, []byte(data))
	})
}
