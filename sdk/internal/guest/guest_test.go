package guest

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/genload/genload/sdk/abi"
)

func TestSlice(t *testing.T) {
	reset()
	p := Alloc(16)
	q := Alloc(0) // distinct 8-byte buffer
	if p == 0 || q == 0 || p == q || p%8 != 0 {
		t.Fatalf("Alloc gave %#x, %#x", p, q)
	}
	cases := []struct {
		ptr, n uint32
		ok     bool
	}{
		{p, 16, true},     // whole buffer
		{p + 8, 8, true},  // tail sub-range
		{p + 8, 9, false}, // one byte past the end
		{p - 1, 1, false}, // before the buffer
		{q, 8, true},      // size 0 still gives 8 bytes
		{0xfffffff0, 32, false},
	}
	for _, c := range cases {
		b, err := Slice(c.ptr, c.n)
		if (err == nil) != c.ok || (c.ok && len(b) != int(c.n)) {
			t.Errorf("Slice(%#x, %d) = %d bytes, %v; want ok=%v", c.ptr, c.n, len(b), err, c.ok)
		}
		var se *StatusError
		if err != nil && (!errors.As(err, &se) || se.Status != abi.BadInput) {
			t.Errorf("Slice error %v is not status 1", err)
		}
	}
	if _, err := Slice(p+8, 8); err != nil { // p is now Slice's remembered buffer
		t.Fatal(err)
	}
	Free(p)
	if _, err := Slice(p+8, 1); err == nil {
		t.Error("freed remembered buffer still accepted")
	}
	if _, err := Slice(p, 1); err == nil {
		t.Error("freed buffer still accepted")
	}
	if Alloc(maxAlloc+1) != 0 {
		t.Error("Alloc above 1 GiB did not return 0")
	}
}

type cfg struct {
	K float64 `json:"k"`
}

func TestInitAndGuard(t *testing.T) {
	var seen *Env
	var got cfg
	setup := func(decode bool) func(*Env) error {
		return func(e *Env) error {
			seen = e
			if decode {
				got = cfg{K: 0.9}
				return e.Decode(&got)
			}
			return nil
		}
	}
	cases := []struct {
		name     string
		decode   bool
		envelope string
		rc       int32
		errPart  string
	}{
		{"ok", true, `{"abi":1,"abi_minor":0,"host":"genload","seed":18446744073709551615,"config":{"k":2}}`, 0, ""},
		{"unknown-envelope-key-ignored", true, `{"abi":1,"future":true,"config":{}}`, 0, ""},
		{"unknown-config-key", true, `{"abi":1,"config":{"kk":2}}`, -1, `config: json: unknown field "kk" (known keys: k)`},
		{"wrong-type", true, `{"config":{"k":"x"}}`, -1, "cannot unmarshal string"},
		{"config-never-decoded", false, `{"config":{"a":1,"b":2}}`, -1, `takes no config keys, got ["a" "b"]`},
		{"abi-v2-host", true, `{"abi":2}`, -4, "host speaks ABI v2"},
		{"not-json", true, `{`, -1, "init envelope"},
	}
	for _, c := range cases {
		reset()
		Register(abi.KindLengths, Info{Name: "t", Version: "1"}, setup(c.decode))
		rc := Init([]byte(c.envelope))
		if rc != c.rc || !strings.Contains(string(LastError()), c.errPart) {
			t.Errorf("%s: rc %d (%q), want %d containing %q", c.name, rc, LastError(), c.rc, c.errPart)
		}
		if c.name == "ok" && (seen.Seed != 1<<64-1 || got.K != 2 || seen.Host != "genload" || !Initialised()) {
			t.Errorf("ok: env %+v, cfg %+v", seen, got)
		}
	}
	// Init twice is bad input.
	reset()
	Register(abi.KindLengths, Info{Name: "t", Version: "1"}, setup(true))
	if rc := Init([]byte(`{}`)); rc != 0 {
		t.Fatalf("first init rc %d", rc)
	}
	if rc := Init([]byte(`{}`)); rc != -1 || !strings.Contains(string(LastError()), "called twice") {
		t.Errorf("second init rc %d %q, want -1", rc, LastError())
	}
	// Panics become status 2 with the value and a stack; errors keep their status.
	rc := Guard(func() (int32, error) { panic("boom") })
	if rc != -2 || !strings.HasPrefix(string(LastError()), "panic: boom\n") || !strings.Contains(string(LastError()), "goroutine") {
		t.Errorf("panic: rc %d, %q", rc, LastError())
	}
	if rc := Guard(func() (int32, error) { return 3, nil }); rc != 3 || len(LastError()) != 0 {
		t.Errorf("success: rc %d, last error %q not cleared", rc, LastError())
	}
	if rc := Guard(func() (int32, error) { return 0, errors.New("plain") }); rc != -2 {
		t.Errorf("plain error rc %d, want -2", rc)
	}
}

func TestInfoJSON(t *testing.T) {
	reset()
	if got := string(InfoJSON()); !strings.Contains(got, `"name":""`) {
		t.Errorf("unregistered info %s", got)
	}
	Register(abi.KindRouter, Info{Name: "rr", Version: "1.2.3", Caps: []string{"completions"}}, func(*Env) error { return nil })
	want := `{"name":"rr","version":"1.2.3","kind":"router","abi_minor":0,"caps":["completions"]}`
	if got := string(InfoJSON()); got != want {
		t.Errorf("info %s, want %s", got, want)
	}
	if !HasCap("completions") || HasCap("pure") {
		t.Error("HasCap")
	}
	defer func() {
		if recover() == nil {
			t.Error("second Register did not panic")
		}
	}()
	Register(abi.KindRouter, Info{Name: "again"}, nil)
}

// FuzzInit feeds arbitrary envelopes to genload_init: it must never panic past Guard and must
// return 0 or a negated status 1 or 4.
func FuzzInit(f *testing.F) {
	for _, s := range []string{`{"abi":1,"config":{"k":0.9}}`, `{"config":[1]}`, `{"seed":-1}`, `null`, `{"config":{"k":{"x":[]}}}`, "\xff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, env []byte) {
		reset()
		Register(abi.KindLengths, Info{Name: "f"}, func(e *Env) error {
			var c cfg
			return e.Decode(&c)
		})
		if rc := Init(env); rc != 0 && rc != -1 && rc != -4 {
			t.Errorf("Init(%q) = %d (%s)", env, rc, LastError())
		}
	})
}

// FuzzSlice checks that Slice never returns bytes outside the one pinned buffer.
func FuzzSlice(f *testing.F) {
	f.Add(uint32(0), uint32(8), uint32(4))
	f.Add(uint32(16), uint32(0xffffffff), uint32(1))
	f.Fuzz(func(t *testing.T, off, n, size uint32) {
		reset()
		size %= 1 << 16
		p := Alloc(size)
		b, err := Slice(p+off, n)
		inside := uint64(off)+uint64(n) <= uint64(max(8, (size+7)&^7)) && p+off >= p
		if (err == nil) != inside || (err == nil && len(b) != int(n)) {
			t.Errorf("Slice(p+%d, %d) on %d bytes: %d bytes, %v", off, n, size, len(b), err)
		}
	})
}

func TestU32s(t *testing.T) {
	// Lengths across the 8-wide blocks and the tail, with a bad value in each position.
	for n := range 20 {
		src := make([]int, n)
		for i := range src {
			src[i] = i*0x01020304 + 7
		}
		dst := make([]byte, 4*n)
		if bad := PutU32s(dst, src); bad != -1 {
			t.Fatalf("n=%d: bad index %d", n, bad)
		}
		for i := range src {
			if got := int(binary.LittleEndian.Uint32(dst[4*i:])); got != src[i] {
				t.Fatalf("n=%d i=%d: wrote %d, want %d", n, i, got, src[i])
			}
		}
		back := make([]int, n)
		GetU32s(back, dst)
		if !slices.Equal(back, src) {
			t.Fatalf("n=%d: read back %v, want %v", n, back, src)
		}
		for j := range n {
			for _, v := range []int{-1, math.MaxUint32 + 1, math.MinInt} {
				s := slices.Clone(src)
				s[j] = v
				if bad := PutU32s(make([]byte, 4*n), s); bad != j {
					t.Errorf("n=%d: value %d at %d reported at %d", n, v, j, bad)
				}
			}
		}
	}
	var s Ints
	a := s.Get(3)
	a[0] = 42
	if b := s.Get(2); &b[0] != &a[0] || b[0] != 42 {
		t.Errorf("Ints.Get did not reuse its buffer")
	}
	if c := s.Get(100); len(c) != 100 {
		t.Errorf("Ints.Get(100) has %d ints", len(c))
	}
}

// The known keys of an unknown-key error are the json names Decode fills: tags, untagged
// exported fields, embedded structs' fields; not "-" or unexported fields. A plugin that
// takes no keys (an empty struct) says none.
func TestUnknownKeyListsTheKnownOnes(t *testing.T) {
	type inner struct {
		Mode string `json:"mode"`
	}
	type config struct {
		inner
		K      float64 `json:"k,omitempty"`
		Scale  int
		Hidden int `json:"-"`
		secret int
	}
	_ = config{secret: 1} // an unexported field: not a key
	for _, tc := range []struct {
		v    any
		want string
	}{
		{&config{}, `config: json: unknown field "kk" (known keys: mode, k, Scale)`},
		{&struct{}{}, `config: json: unknown field "kk" (known keys: none)`},
	} {
		e := &Env{config: []byte(`{"kk":1}`)}
		if err := e.Decode(tc.v); err == nil || err.Error() != tc.want {
			t.Errorf("Decode(%T) = %v, want %q", tc.v, err, tc.want)
		}
	}
}
