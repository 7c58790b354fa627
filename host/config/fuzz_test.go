package config

import (
	"bytes"
	"os"
	"reflect"
	"testing"

	"github.com/BurntSushi/toml"
)

// FuzzParse: any input either fails to parse, or parses to a config that survives a round
// trip — encoded back to TOML and parsed again it is the same config, and Validate gives the same
// verdict — so no key is decoded into something the file cannot say (the results header stores
// the config and --resume reads it back). Run: go test -fuzz=FuzzParse ./host/config
func FuzzParse(f *testing.F) {
	if b, err := os.ReadFile("../../bench.toml"); err == nil {
		f.Add(b)
	}
	for _, s := range []string{
		"", "seed = 1", "[matrix]\nseq_lens = [1, 2]\n", "[[workers]]\nurl = \"http://x\"\n[[workers]]\n",
		"max_tokens = \"x\"", "[lengths.config]\nk = 0.9\n[lengths", "pairs = [[1]]", "[matrix]\npairs = [[1], [2, 3, 4], []]\n",
		"[worker_grid]\nservers = 3\nserver_urls = [\"http://a\"]\n", "[timeouts]\ntotal = \"-5s\"\n", "\"\\u0000\" = 1",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		c, err := Parse("fuzz.toml", src)
		if err != nil {
			return
		}
		valid := c.Validate() == nil
		if valid {
			_ = c.ResolvedWorkers("http://127.0.0.1:1")
		}
		var enc bytes.Buffer
		if err := toml.NewEncoder(&enc).Encode(c); err != nil {
			t.Fatalf("parsed config does not encode: %v\ninput:\n%s", err, src)
		}
		c2, err := Parse("again.toml", enc.Bytes())
		if err != nil {
			t.Fatalf("re-encoded config does not parse: %v\nencoded:\n%s", err, enc.Bytes())
		}
		if v2 := c2.Validate() == nil; v2 != valid {
			t.Errorf("Validate: %v before the round trip, %v after\nencoded:\n%s", valid, v2, enc.Bytes())
		}
		c.File, c.lines, c2.File, c2.lines = "", nil, "", nil
		if !reflect.DeepEqual(c, c2) {
			t.Errorf("config changed in the round trip:\n got %+v\nwant %+v\nencoded:\n%s", c2, c, enc.Bytes())
		}
	})
}

// A negative seed is refused with file:line, not wrapped to 2⁶⁴−1 (the round trip of FuzzParse
// found the wrap: TOML's signed integers cannot write such a seed back).
func TestNegativeSeedIsRefused(t *testing.T) {
	_, err := Parse("bench.toml", []byte("max_tokens = 10\nseed = -1\n"))
	if err == nil || err.Error() != "bench.toml:2: [seed] must be ≥ 0, got -1" {
		t.Fatalf("seed = -1: %v", err)
	}
}
