package sse

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// clearTokens makes every mark's Tokens -1 and keeps At and Text, packed or not.
func TestMarksClearTokens(t *testing.T) {
	in := []Mark{{1, 2, 3}, {atMask + 1, 4, 5}, {time.Second, textMask, 0}, {7, 8, -1}, {9, 1, 300}}
	m := MarksOf(in...)
	m.clearTokens()
	for k, w := range in {
		w.Tokens = -1
		if got := m.Get(k); got != w {
			t.Fatalf("mark %d = %+v, want %+v", k, got, w)
		}
	}
}

// Marks returns exactly what was appended, packed or not: values at and beyond each packed
// field's range (At ≥ 2⁴⁴ ns or negative, Text ≥ 4095 or negative, Tokens ≥ 254 or < −1).
func TestMarksExact(t *testing.T) {
	edge := []Mark{
		{0, 0, -1}, {1, 1, 0}, {atMask, textMask - 1, 253},
		{atMask + 1, 0, -1}, {-1, 5, 1}, {math.MaxInt64, 1, 1}, {math.MinInt64, 1, 1},
		{time.Second, textMask, 1}, {time.Second, math.MaxInt32, 1}, {time.Second, -1, 1},
		{time.Second, 3, 254}, {time.Second, 3, -2}, {time.Second, 3, math.MaxInt32}, {time.Second, 3, math.MinInt32},
		{5 * time.Hour, 2, -1}, {20 * time.Millisecond, 7, 4},
	}
	r := rand.New(rand.NewPCG(1, 2))
	want := append([]Mark(nil), edge...)
	for range 10000 {
		want = append(want, Mark{
			At:     time.Duration(r.Int64N(1 << 46)),
			Text:   int32(r.IntN(5000)) - 2,
			Tokens: int32(r.IntN(300)) - 3,
		})
	}
	m := MarksOf(want...)
	if m.Len() != len(want) {
		t.Fatalf("Len = %d, want %d", m.Len(), len(want))
	}
	for k, w := range want {
		if got := m.Get(k); got != w {
			t.Fatalf("mark %d = %+v, want %+v", k, got, w)
		}
		if m.At(k) != w.At {
			t.Fatalf("At(%d) = %v, want %v", k, m.At(k), w.At)
		}
	}
	if !reflect.DeepEqual(m.Slice(), want) {
		t.Fatal("Slice differs")
	}
	n := 0
	for k, got := range m.All() {
		if k != n || got != want[k] {
			t.Fatalf("All yielded %d %+v, want %d %+v", k, got, n, want[n])
		}
		n++
	}
	if n != len(want) {
		t.Fatalf("All yielded %d marks, want %d", n, len(want))
	}
	// the JSON is the one of a []Mark, both ways
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	wb, _ := json.Marshal(want)
	if string(b) != string(wb) {
		t.Fatal("JSON differs from the []Mark's")
	}
	var back Marks
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back.Slice(), want) {
		t.Fatalf("JSON round trip: %v", err)
	}
	if b, _ := json.Marshal(Marks{}); string(b) != "null" {
		t.Fatalf("empty Marks = %s, want null", b)
	}
}

// An ordinary stream's marks (small texts, unknown or small token deltas, offsets under
// hours) are all packed: 8 bytes each, no side list, no regrowth after Grow.
func TestMarksPacked(t *testing.T) {
	var m Marks
	m.Grow(1001)
	w0 := &m.w[:1][0]
	for k := range 1001 {
		m.Append(Mark{At: time.Duration(k) * 20 * time.Millisecond, Text: int32(k % 40), Tokens: int32(k%3) - 1})
	}
	if len(m.x) != 0 || &m.w[0] != w0 {
		t.Fatalf("%d marks in the side list, regrown %v", len(m.x), &m.w[0] != w0)
	}
	if a := testing.AllocsPerRun(100, func() { m.w = m.w[:0]; m.Append(Mark{At: 1, Text: 1, Tokens: -1}) }); a != 0 {
		t.Fatalf("Append allocates %v times", a)
	}
}
