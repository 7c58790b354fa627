package dispatch

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/genload/genload/host/plan"
)

// idsJSONLen is the length appendIDs writes, for ids in and out of the id table (negative,
// past idTableSize, the extremes of int32).
func TestIDsJSONLen(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 7, 100, 1000} {
		for _, spread := range []int64{10, idTableSize, 1 << 31} {
			ids := make([]int32, n)
			for i := range ids {
				ids[i] = int32(r.Int64N(2*spread) - spread)
			}
			if n > 2 {
				ids[0], ids[1] = math.MaxInt32, math.MinInt32
			}
			if got, want := idsJSONLen(ids), len(appendIDs(nil, ids)); got != want {
				t.Errorf("n = %d, ids within ±%d: idsJSONLen %d, appendIDs wrote %d", n, spread, got, want)
			}
		}
	}
}

// A plan of exactBodies requests or more sizes each body's buffer exactly (its cap within the
// template's spare of its length) and writes the same bytes as a plan of one request each.
func TestManyBodiesAreSizedExactly(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	prompts := make([][]int32, exactBodies)
	for i := range prompts {
		p := make([]int32, 1+r.IntN(3000))
		for k := range p {
			p[k] = int32(r.IntN(151936))
		}
		if i%9 == 0 {
			p[0] = idTableSize + int32(i) // one id out of the table
		}
		prompts[i] = p
	}
	c, err := New(Options{Target: "http://127.0.0.1:1", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	many, err := plan.ForPrompts(ModeRouted, prompts, nil, 1, 100)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := c.calls(many)
	if err != nil {
		t.Fatal(err)
	}
	var bound, exact int
	for i, cl := range cs {
		one, err := plan.ForPrompts(ModeRouted, prompts[i:i+1], nil, 1, 100)
		if err != nil {
			t.Fatal(err)
		}
		c1, err := New(Options{Target: "http://127.0.0.1:1", Model: "m"})
		if err != nil {
			t.Fatal(err)
		}
		want, err := c1.calls(one)
		c1.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(cl.body, want[0].body) {
			t.Fatalf("request %d: the body of a plan of %d differs from the same prompt's alone", i, len(cs))
		}
		if spare := cap(cl.body) - len(cl.body); spare > 512+16+8 && prompts[i][0] < idTableSize {
			t.Errorf("request %d: %d bytes of body in a buffer of %d", i, len(cl.body), cap(cl.body))
		}
		bound += cap(want[0].body)
		exact += cap(cl.body)
	}
	if exact >= bound {
		t.Errorf("exact buffers %d bytes, bound buffers %d", exact, bound)
	}
}
