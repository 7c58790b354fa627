package dispatch

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A request whose body the server reads slowly records how long writing it took, that time
// is most of its TTFT, and the Do's client load names it as the bottleneck; the process's CPU
// share over the Do is recorded too.
func TestClientLoadRecordsBodyWrite(t *testing.T) {
	plainOnly(t) // the write's share of TTFT; TestClientLoadQuickRequest and the large-body test race the recording
	// The server pauses 4 ms after every read of up to 64 KiB: about 1.8 s for the 28 MB
	// body, so that the write outweighs what the client spends on the body before its first
	// byte (its one prompt's text: about 0.7 s under the race detector on two busy cores).
	const pause = 4 * time.Millisecond
	read := make(chan time.Duration, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t0 := time.Now()
		buf := make([]byte, 64<<10)
		for {
			_, err := r.Body.Read(buf)
			if err != nil {
				break
			}
			time.Sleep(pause)
		}
		read <- time.Since(t0)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"text\":\"a\",\"finish_reason\":null}]}\n\n")
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"text\":\"b\",\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	cl, err := New(Options{Target: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	prompt := make([]int32, 4_000_000) // a body of about 28 MB: far beyond the socket buffers
	for i := range prompt {
		prompt[i] = int32(100000 + i%50000)
	}
	res, err := cl.Send(context.Background(), ModeRouted, [][]int32{prompt}, 2)
	if err != nil || res.Err() != nil {
		t.Fatal(err, res.Err())
	}
	rq := res.Requests[0]
	serverRead := <-read
	// The body cannot all be written before the server read most of it: at least the reads
	// beyond what the kernel's buffers (a few MB on loopback) hold.
	if rq.Write < serverRead/2 || rq.Write > rq.Header-rq.Sent {
		t.Fatalf("write %v: want at least half the server's %v reading it, and no later than the headers (%v after the send)", rq.Write, serverRead, rq.Header-rq.Sent)
	}
	l := res.Client
	if l.WriteRequest != 0 || l.WriteShare < 0.5 || l.WriteShare > 1 {
		t.Fatalf("write share %.3f of request %d: want most of request 0's TTFT", l.WriteShare, l.WriteRequest)
	}
	if l.Build <= 0 || l.CPU <= 0 || l.Cores < 1 || l.Wall <= 0 || l.CPUShare <= 0 || l.CPUShare > 1.5 {
		t.Fatalf("load %+v: want a build time, CPU, cores, wall and a CPU share in (0, 1.5]", l)
	}
	if l.Sent != rq.Sent+rq.Write || l.BodyBytes != int64(rq.BodyBytes) || rq.BodyBytes < 20<<20 {
		t.Fatalf("sent %v (request sent %v + write %v), body bytes %d (request %d)", l.Sent, rq.Sent, rq.Write, l.BodyBytes, rq.BodyBytes)
	}
	if w := l.BodyWrite(rq.Header-rq.Sent, 0.05); !strings.Contains(w, "writing the body of request 0 took") {
		t.Fatalf("body write %q does not name the body's write", w)
	}
}

// A quick request records a short write, and nothing about it is a bottleneck.
func TestClientLoadQuickRequest(t *testing.T) {
	f := newFakeServer(t)
	f.hook = func(_ int, w http.ResponseWriter, _ *http.Request) bool {
		time.Sleep(20 * time.Millisecond) // a prefill
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"text\":\"a\",\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n")
		return true
	}
	cl, err := New(Options{Target: f.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	res, err := cl.Send(context.Background(), ModeRouted, [][]int32{{1, 2, 3}}, 1)
	if err != nil || res.Err() != nil {
		t.Fatal(err, res.Err())
	}
	rq := res.Requests[0]
	if rq.Write <= 0 || rq.Write > 5*time.Millisecond {
		t.Fatalf("write of a 60-byte request %v, want > 0 and well under the 20 ms prefill", rq.Write)
	}
	if sh := res.Client.WriteShare; sh <= 0 || sh > 0.25 {
		t.Fatalf("write share %.3f, want a small share of a TTFT ≥ 20 ms", sh)
	}
}

func TestHistQuantile(t *testing.T) {
	buckets := []float64{0, 1e-6, 1e-3, 1e-2, 1e30}
	counts := []uint64{0, 98, 1, 1}
	if got := histQuantile(counts, buckets, 0.5); got != time.Millisecond {
		t.Errorf("p50 = %v, want the upper bound 1ms of the bucket holding it", got)
	}
	if got := histQuantile(counts, buckets, 0.98); got != time.Millisecond {
		t.Errorf("p98 = %v, want 1ms (the 98th of 100 is the second bucket's last)", got)
	}
	if got := histQuantile(counts, buckets, 0.99); got != 10*time.Millisecond {
		t.Errorf("p99 = %v, want 10ms (the 99th of 100 is in the third bucket, (1ms, 10ms])", got)
	}
	if got := histQuantile([]uint64{0, 0, 0, 1}, buckets, 0.5); got != 10*time.Millisecond {
		t.Errorf("an unbounded last bucket gives its lower bound: %v", got)
	}
	if got := histQuantile(make([]uint64, 4), buckets, 0.5); got != 0 {
		t.Errorf("empty: %v", got)
	}
}
