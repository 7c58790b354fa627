package sse

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/valyala/fastjson"
)

// benchStream is n vLLM-shaped token chunks (about 165 B each, the size of a real vLLM chunk),
// a finish chunk, a usage chunk and [DONE].
func benchStream(n int) []byte {
	var b bytes.Buffer
	for i := 0; i < n-1; i++ {
		fmt.Fprintf(&b, "data: {\"id\":\"cmpl-bench\",\"object\":\"text_completion\",\"created\":1767000000,\"model\":\"m\",\"choices\":[{\"index\":0,\"text\":\" tok%d\",\"logprobs\":null,\"finish_reason\":null}]}\n\n", i%1000)
	}
	b.WriteString("data: {\"id\":\"cmpl-bench\",\"object\":\"text_completion\",\"created\":1767000000,\"model\":\"m\",\"choices\":[{\"index\":0,\"text\":\" end\",\"logprobs\":null,\"finish_reason\":\"length\"}]}\n\n")
	fmt.Fprintf(&b, "data: {\"id\":\"cmpl-bench\",\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\ndata: [DONE]\n\n", n, n+3)
	return b.Bytes()
}

// benchStreamLogprobs is benchStream with "logprobs":1 asked: every token chunk carries
// the vLLM logprobs object of its one token.
func benchStreamLogprobs(n int) []byte {
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		fr := "null"
		if i == n-1 {
			fr = `"length"`
		}
		fmt.Fprintf(&b, "data: {\"id\":\"cmpl-bench\",\"object\":\"text_completion\",\"created\":1767000000,\"model\":\"m\",\"choices\":[{\"index\":0,\"text\":\" tok%d\",\"logprobs\":{\"text_offset\":[%d],\"token_logprobs\":[-0.31326162815093994],\"tokens\":[\" tok%d\"],\"top_logprobs\":[{\" tok%d\":-0.31326162815093994}]},\"finish_reason\":%s}]}\n\n", i%1000, 4*i, i%1000, i%1000, fr)
	}
	fmt.Fprintf(&b, "data: {\"id\":\"cmpl-bench\",\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\ndata: [DONE]\n\n", n, n+3)
	return b.Bytes()
}

// BenchmarkParseLogprobs is BenchmarkParse's genload path (Reader + Demux + Finalize) on
// 1000 chunks without and with one logprob per token: the client-side cost of logprobs
// per chunk, and the stream's bytes per token.
func BenchmarkParseLogprobs(b *testing.B) {
	const n = 1000
	for _, bc := range []struct {
		name   string
		stream []byte
	}{{"none", benchStream(n)}, {"logprobs1", benchStreamLogprobs(n)}} {
		b.Run(bc.name, func(b *testing.B) {
			src := bytes.NewReader(bc.stream)
			rd := NewReader(src, 0)
			d := &Demux{MarkCap: n + 1}
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.stream)))
			for range b.N {
				src.Reset(bc.stream)
				rd.Reset(pieces{src})
				d.Reset(time.Now(), 1)
				if err := d.Run(rd); err != nil {
					b.Fatal(err)
				}
				if s := d.Finalize(n); s[0].Marks.Len() != n || s[0].CompletionTokens != n {
					b.Fatalf("%d marks, %d tokens", s[0].Marks.Len(), s[0].CompletionTokens)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/chunk")
			b.ReportMetric(float64(len(bc.stream))/n, "wireB/token")
		})
	}
}

// benchSink keeps a baseline's results observable.
var benchSink int

// BenchmarkParse isolates the per-chunk parsing cost (no network): genload's Reader +
// Demux (timestamp per read, fastjson, per-index records) against bufio.Scanner +
// encoding/json (net/http-style) and bufio lines + fastjson (raw floor), on the same
// in-memory stream of 1000 chunks read in 4 KiB pieces.
func BenchmarkParse(b *testing.B) {
	const n = 1000
	stream := benchStream(n)
	b.Run("genload", func(b *testing.B) {
		src := bytes.NewReader(stream)
		rd := NewReader(src, 0)
		d := &Demux{MarkCap: n + 1}
		b.ReportAllocs()
		b.SetBytes(int64(len(stream)))
		for range b.N {
			src.Reset(stream)
			rd.Reset(pieces{src})
			d.Reset(time.Now(), 1)
			if err := d.Run(rd); err != nil {
				b.Fatal(err)
			}
			if s := d.Finalize(n); s[0].Marks.Len() != n {
				b.Fatalf("%d marks", s[0].Marks.Len())
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/chunk")
	})
	b.Run("encoding_json", func(b *testing.B) {
		src := bytes.NewReader(stream)
		type chunk struct {
			Choices []struct {
				Index        int     `json:"index"`
				Text         string  `json:"text"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		b.ReportAllocs()
		b.SetBytes(int64(len(stream)))
		for range b.N {
			src.Reset(stream)
			sc := bufio.NewScanner(pieces{src})
			var at []time.Time
			for sc.Scan() {
				line := sc.Bytes()
				if !bytes.HasPrefix(line, []byte("data: ")) || string(line[6:]) == "[DONE]" {
					continue
				}
				now := time.Now()
				var c chunk
				if err := json.Unmarshal(line[6:], &c); err != nil {
					b.Fatal(err)
				}
				if len(c.Choices) > 0 {
					at = append(at, now)
				}
			}
			benchSink = len(at) // the baseline keeps its timestamps, as genload does
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/chunk")
	})
	b.Run("raw_fastjson", func(b *testing.B) {
		src := bytes.NewReader(stream)
		br := bufio.NewReaderSize(pieces{src}, 16<<10)
		var p fastjson.Parser
		at := make([]time.Time, 0, n+1)
		b.ReportAllocs()
		b.SetBytes(int64(len(stream)))
		for range b.N {
			src.Reset(stream)
			br.Reset(pieces{src})
			at = at[:0]
			for {
				line, err := br.ReadSlice('\n')
				if err != nil {
					break
				}
				if !bytes.HasPrefix(line, []byte("data: ")) || string(line[6:len(line)-1]) == "[DONE]" {
					continue
				}
				now := time.Now()
				v, err := p.ParseBytes(line[6 : len(line)-1])
				if err != nil {
					b.Fatal(err)
				}
				for _, ch := range v.GetArray("choices") {
					if len(ch.GetStringBytes("text")) > 0 {
						at = append(at, now)
					}
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/chunk")
	})
}

// pieces limits every Read to 4 KiB, like socket reads of a busy stream.
type pieces struct{ r *bytes.Reader }

func (p pieces) Read(b []byte) (int, error) {
	if len(b) > 4096 {
		b = b[:4096]
	}
	return p.r.Read(b)
}

// logprobsChunk is the vLLM-shaped token chunk of BenchmarkDecode with "logprobs":1 asked:
// the legacy completions logprobs object for its one token (the top-1 entry is the sampled
// token under greedy decoding).
const logprobsChunk = `{"id":"cmpl-bench","object":"text_completion","created":1767000000,"model":"m","choices":[{"index":0,"text":" tok17","logprobs":{"text_offset":[412],"token_logprobs":[-0.31326162815093994],"tokens":[" tok17"],"top_logprobs":[{" tok17":-0.31326162815093994}]},"finish_reason":null,"stop_reason":null}]}`

// BenchmarkDecodeLogprobs is the cost of asking for logprobs on the client: decoding one
// vLLM-shaped token chunk without logprobs ("logprobs":null) and with one logprob per
// token, reporting ns per chunk, allocations and the event's bytes per token on the wire
// (data line "data: …\n\n" included).
func BenchmarkDecodeLogprobs(b *testing.B) {
	for _, bc := range []struct{ name, data string }{
		{"none", `{"id":"cmpl-bench","object":"text_completion","created":1767000000,"model":"m","choices":[{"index":0,"text":" tok17","logprobs":null,"finish_reason":null,"stop_reason":null}]}`},
		{"logprobs1", logprobsChunk},
	} {
		data := []byte(bc.data)
		for _, path := range []string{"scanner", "fastjson"} {
			b.Run(bc.name+"/"+path, func(b *testing.B) {
				var d Decoder
				dec := d.Decode
				if path == "fastjson" {
					dec = func(data []byte) (*Chunk, error) { return refDecode(&d, data) }
				}
				c, err := dec(data)
				if err != nil || len(c.Choices) != 1 {
					b.Fatal(err)
				}
				tokens := 1
				if c.Choices[0].HasLogprobs {
					tokens = c.Choices[0].Logprobs
				}
				b.ReportAllocs()
				for range b.N {
					if _, err := dec(data); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len("data: ")+len(data)+2)/float64(tokens), "wireB/token")
			})
		}
	}
}
