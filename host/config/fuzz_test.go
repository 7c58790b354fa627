package config

import (
	"os"
	"testing"
)

// FuzzParse: any input either parses (and then validates without panicking) or returns an
// error; it never panics or hangs. Run: go test -fuzz=FuzzParse ./host/config
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
		if c.Validate() == nil {
			_ = c.ResolvedWorkers("http://127.0.0.1:1")
		}
	})
}
