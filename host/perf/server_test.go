package perf

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"
)

func post(t *testing.T, addr string) []byte {
	t.Helper()
	resp, err := http.Post("http://"+addr+"/v1/completions", "application/json", bytes.NewReader([]byte(`{"prompt":[1]}`)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBurstServer(t *testing.T) {
	s, err := NewBurstServer("127.0.0.1:0", 5)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for range 2 { // two requests on one keep-alive connection
		b := post(t, s.Addr())
		// 5 token chunks (4 + the finish chunk), a usage chunk and [DONE]: 7 events.
		if n := bytes.Count(b, []byte("data: ")); n != 7 {
			t.Errorf("%d events, want 7", n)
		}
		if n := bytes.Count(b, []byte(`"text":`)); n != 5 {
			t.Errorf("%d token chunks, want 5", n)
		}
		if !bytes.HasSuffix(b, []byte("data: [DONE]\n\n")) || !bytes.Contains(b, []byte(`"completion_tokens":5`)) {
			t.Errorf("body does not end with usage 5 and [DONE]: %q", b[max(0, len(b)-200):])
		}
	}
}

func TestPacedServerStamps(t *testing.T) {
	s, err := NewPacedServer("127.0.0.1:0", 3, func(int) { time.Sleep(time.Millisecond) })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	before := time.Now().UnixNano()
	b := post(t, s.Addr())
	after := time.Now().UnixNano()
	var stamps []int64
	for _, ev := range bytes.Split(b, []byte("\n\n")) {
		_, rest, ok := bytes.Cut(ev, []byte(`"text":"`))
		if !ok {
			continue
		}
		v, err := strconv.ParseInt(string(rest[:StampWidth]), 10, 64)
		if err != nil || rest[StampWidth] != '"' {
			t.Fatalf("stamp %q is not %d digits", rest, StampWidth)
		}
		stamps = append(stamps, v)
	}
	if len(stamps) != 3 {
		t.Fatalf("%d stamped chunks, want 3", len(stamps))
	}
	// Each stamp is taken after a 1 ms wait, inside the request, in increasing order.
	for i, v := range stamps {
		if v < before || v > after || (i > 0 && v-stamps[i-1] < int64(time.Millisecond)) {
			t.Errorf("stamp %d = %d outside [%d, %d] or < 1 ms after the previous", i, v, before, after)
		}
	}
	if !bytes.Contains(b, []byte(`"finish_reason":"length"`)) || !bytes.HasSuffix(b, []byte("data: [DONE]\n\n")) {
		t.Errorf("last chunk or [DONE] missing: %q", b)
	}
}
