package sse_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/genload/genload/host/sse"
)

// Two interleaved choices, a usage-only chunk and [DONE], read from any io.Reader.
func Example() {
	stream := `data: {"id":"cmpl-1","choices":[{"index":1,"text":" sky","finish_reason":null}]}

data: {"id":"cmpl-1","choices":[{"index":0,"text":" is blue","finish_reason":"length"}]}

: keep-alive

data: {"id":"","choices":[{"index":1,"text":"!","finish_reason":"length"}]}

data: {"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}

data: [DONE]

`
	start := time.Now()
	d := &sse.Demux{KeepText: true}
	d.Reset(start, 2)
	if err := d.Run(sse.NewReader(strings.NewReader(stream), 0)); err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range d.Finalize(0) {
		fmt.Printf("choice %d: %q, %d chunks with text, finish %s\n", s.Index, s.Text, s.Marks.Len(), s.FinishReason)
	}
	u, _ := d.RequestUsage()
	fmt.Println("completion tokens:", u.CompletionTokens, "done:", d.Done)
	// Output:
	// choice 0: " is blue", 1 chunks with text, finish length
	// choice 1: " sky!", 2 chunks with text, finish length
	// completion tokens: 3 done: true
}
