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

// benchStream is n vLLM-shaped token chunks (about 165 B each, like the perf anchors),
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
