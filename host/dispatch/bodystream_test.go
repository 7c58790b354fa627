package dispatch

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
)

// A streamed body is byte for byte the built one, and its size is exact, for array and single
// prompts, ids beyond the table, and after a rewind.
func TestBodyStreamIsTheBody(t *testing.T) {
	seed := int64(7)
	c, err := New(Options{Target: "http://127.0.0.1:1", Model: "m", Seed: &seed, Logprobs: 1, ContinuousUsage: true,
		ExtraBody: map[string]any{"top_k": 5}})
	if err != nil {
		t.Fatal(err)
	}
	ps := idPrompts{{1, 22, 333, 262143, 262144, 1 << 30}, {5}, {9, 8, 7, 6}}
	for _, tc := range []struct {
		idx   []int
		array bool
		n     int
	}{{[]int{0, 1, 2}, true, 1}, {[]int{2, 0}, true, 1}, {[]int{0}, false, 1}, {[]int{1}, false, 4}} {
		want := c.tmpl.appendBody(nil, ps, tc.idx, tc.array, tc.n, 17)
		s := newBodyStream(c.tmpl, ps, tc.idx, tc.array, tc.n, 17)
		for range 2 { // read it twice: a request sent again rewinds its stream
			var got bytes.Buffer
			buf := make([]byte, 5) // small reads: parts are split across them
			for {
				n, err := s.Read(buf)
				got.Write(buf[:n])
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(got.Bytes(), want) || s.size != len(want) {
				t.Fatalf("%+v: stream %q (size %d), body %q (%d)", tc, got.Bytes(), s.size, want, len(want))
			}
			s.rewind()
		}
	}
}

// A body over streamBodyOver is generated as it is sent: the server receives exactly the bytes
// Body returns, with their Content-Length, and again in full when the request is retried.
func TestLargeBodyStreamedAndResent(t *testing.T) {
	const promptLen = 3_000_000
	var attempts atomic.Int32
	got := make(chan []byte, 2)
	srv := newFakeServer(t)
	srv.hook = func(k int, w http.ResponseWriter, r *http.Request) bool {
		rec := srv.recorded()
		got <- rec[len(rec)-1].body
		if cl, _ := strconv.Atoi(r.Header.Get("Content-Length")); cl != len(rec[len(rec)-1].body) {
			t.Errorf("Content-Length %q for a body of %d bytes", r.Header.Get("Content-Length"), len(rec[len(rec)-1].body))
		}
		if attempts.Add(1) == 1 {
			http.Error(w, `{"error":{"message":"busy"}}`, http.StatusServiceUnavailable)
			return true
		}
		// The stream fakeServer would send for it, without decoding the 20 MB body with
		// encoding/json three times first (seconds of the test under -race).
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"id\":\"cmpl-x\",\"choices\":[{\"index\":0,\"text\":\" t0\",\"finish_reason\":null}]}\n\n"+
			"data: {\"id\":\"cmpl-x\",\"choices\":[{\"index\":0,\"text\":\" t1\",\"finish_reason\":\"length\"}]}\n\n"+
			"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":2,\"total_tokens\":%d}}\n\ndata: [DONE]\n\n", promptLen, promptLen+2)
		return true
	}
	cl, err := New(Options{Target: srv.URL, Retries: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	prompt := make([]int32, promptLen) // about 20 MB of JSON
	for i := range prompt {
		prompt[i] = int32(i % 151000)
	}
	p, err := cl.shaped(ModeRouted, [][]int32{prompt}, nil, 2, false)
	if err != nil {
		t.Fatal(err)
	}
	if cs, err := cl.calls(p); err != nil || cs[0].stream == nil || cs[0].body != nil {
		t.Fatalf("the %d-id request is not streamed (%v)", len(prompt), err)
	}
	want, err := cl.Body(p)
	if err != nil || len(want[0]) <= streamBodyOver {
		t.Fatalf("body of %d bytes (%v): want one over %d", len(want[0]), err, streamBodyOver)
	}
	res, err := cl.Do(context.Background(), p)
	if err != nil || res.Err() != nil {
		t.Fatal(err, res.Err())
	}
	if res.Requests[0].Attempts != 2 || res.Requests[0].BodyBytes != len(want[0]) {
		t.Fatalf("attempts %d, body bytes %d: want 2 and %d", res.Requests[0].Attempts, res.Requests[0].BodyBytes, len(want[0]))
	}
	for a := range 2 {
		if b := <-got; !bytes.Equal(b, want[0]) {
			t.Fatalf("attempt %d: the server received %d bytes, not the %d-byte body", a+1, len(b), len(want[0]))
		}
	}
}
