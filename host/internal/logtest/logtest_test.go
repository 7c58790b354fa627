package logtest

import (
	"fmt"
	"sync"
	"testing"
)

func TestLines(t *testing.T) {
	log := "step=1 active=2 decode=2 prefill_tokens=0 fwd_ms=0.250 wall_ms=0.013\n\n" +
		"seq req=3 id=cmpl-x choice=1 finish=length first_ms=-1 last_ms=12.5\n"
	ls := Lines(log)
	if len(ls) != 2 {
		t.Fatalf("%d lines, want 2 (the empty one skipped)", len(ls))
	}
	if got := ls[0].Int(t, "decode"); got != 2 {
		t.Errorf("decode = %d, want 2", got)
	}
	if got := ls[0].Float(t, "fwd_ms"); got != 0.25 {
		t.Errorf("fwd_ms = %v, want 0.25", got)
	}
	if got := ls[0].Int(t, "experts"); got != 0 {
		t.Errorf("an absent key = %d, want 0", got)
	}
	s := ls[1]
	if len(s.Words) != 1 || s.Words[0] != "seq" || s.Values["id"] != "cmpl-x" || s.Values["finish"] != "length" {
		t.Errorf("seq line %+v", s)
	}
	if s.Int(t, "req") != 3 || s.Float(t, "first_ms") != -1 || s.Float(t, "last_ms") != 12.5 {
		t.Errorf("seq line numbers %+v", s.Values)
	}
}

// TestLockedBuffer writes from 8 goroutines at once (run under -race in make test) and
// checks that every line arrived whole.
func TestLockedBuffer(t *testing.T) {
	var b LockedBuffer
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				fmt.Fprintf(&b, "g=%d i=%d\n", g, i)
			}
		}()
	}
	wg.Wait()
	seen := map[[2]int]bool{}
	for _, l := range Lines(b.String()) {
		if len(l.Values) != 2 {
			t.Fatalf("torn line %q", l.Text)
		}
		seen[[2]int{l.Int(t, "g"), l.Int(t, "i")}] = true
	}
	if len(seen) != 800 {
		t.Errorf("%d distinct lines, want 800", len(seen))
	}
}

// TestLockedBufferReset drops the lines written before Reset and keeps the later ones.
func TestLockedBufferReset(t *testing.T) {
	var b LockedBuffer
	fmt.Fprintln(&b, "step=1 warmup=1")
	b.Reset()
	if b.String() != "" {
		t.Fatalf("after Reset: %q, want empty", b.String())
	}
	fmt.Fprintln(&b, "step=2")
	if ls := Lines(b.String()); len(ls) != 1 || ls[0].Int(t, "step") != 2 {
		t.Errorf("after Reset and one write: %+v, want the one line step=2", ls)
	}
}
