package lengthfit

import (
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/genload/genload/host/trace"
)

func writeLog(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func write(p string, b []byte) error { return os.WriteFile(p, b, 0o644) }

// Groups whose names differ only in characters a file name cannot hold ("b/c", "b_c") get
// files of their own; a group whose name is another's file name is refused, naming both.
func TestTablePathsAreUniquePerGroup(t *testing.T) {
	got, err := TablePaths("out/c.toml", []Group{{}, {Name: "b/c"}, {Name: "b_c"}, {Name: "h100"}})
	if err != nil {
		t.Fatal(err)
	}
	h := fnv.New32a()
	h.Write([]byte("b/c"))
	want := []string{"out/c.toml", fmt.Sprintf("out/c.b_c-%08x.toml", h.Sum32()), "out/c.b_c.toml", "out/c.h100.toml"}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("path %d = %q, want %q", i, got[i], want[i])
		}
	}
	if want[1] != "out/c.b_c-88647327.toml" { // the example of TablePaths' documentation
		t.Errorf("the hash of \"b/c\" gives %s", want[1])
	}
	clash := fmt.Sprintf("b_c-%08x", h.Sum32())
	_, err = TablePaths("c.toml", []Group{{}, {Name: "b/c"}, {Name: clash}})
	if err == nil || err.Error() != fmt.Sprintf(`-o c.toml: group "b/c" and group %q would both be written to c.%s.toml: choose another -o`, clash, clash) {
		t.Errorf("clash: %v", err)
	}
}

// -o writes one table per group, never replacing a file that exists unless forced, and says
// where the plugin it names is to be built.
func TestTablesAreNeverReplacedSilently(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("prompt_tokens,deployment\n")
	for i := range 200 {
		fmt.Fprintf(&b, "%d,%s\n", 100+(i*7919)%5000, []string{"b/c", "b_c"}[i%2])
	}
	log := writeLog(t, dir, "col.csv", b.String())
	c := Command{Paths: []string{log}, Table: filepath.Join(dir, "c.toml"), Fields: trace.Fields{Input: "prompt_tokens", Output: "-", Group: "deployment"}}
	var out strings.Builder
	if _, err := c.Run(&out, write); err != nil {
		t.Fatal(err)
	}
	paths, _ := TablePaths(c.Table, []Group{{}, {Name: "b/c"}, {Name: "b_c"}})
	for _, p := range paths {
		body, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(out.String(), "wrote "+p+" "); n != 1 {
			t.Errorf("%q written %d times:\n%s", p, n, out.String())
		}
		for _, want := range []string{`plugin = "empirical.wasm"`, "-o " + filepath.Join(dir, "empirical.wasm") + " ./sdk/examples/empirical", "genload lengths -c " + p} {
			if !strings.Contains(string(body), want) {
				t.Errorf("%s lacks %q:\n%s", p, want, body)
			}
		}
	}
	if a, _ := os.ReadFile(paths[1]); strings.Contains(string(a), `group "b_c"`) {
		t.Errorf("%s holds the other group's table", paths[1])
	}
	// Again: refused before any table is written, naming the first file that exists.
	os.Remove(paths[2])
	out.Reset()
	_, err := c.Run(&out, write)
	if err == nil || err.Error() != "-o "+c.Table+": "+c.Table+" exists: remove it, choose another -o, or give --force to replace it (no table written)" {
		t.Errorf("second run: %v", err)
	}
	if _, err := os.Stat(paths[2]); err == nil {
		t.Errorf("%s written though the run was refused", paths[2])
	}
	c.Force = true
	if _, err := c.Run(&out, write); err != nil {
		t.Errorf("--force: %v", err)
	}
}

// Prompt lengths that are all equal name the span of their records; a group too small for a
// shape gets no settings but the reason, with k's interval; a large sample gets them.
func TestSmallAndEqualSamplesSaySo(t *testing.T) {
	dir := t.TempDir()
	eq := writeLog(t, dir, "eq.csv", "prompt_tokens,completion_tokens\n100,10\n100,20\n100,30\n")
	_, err := Command{Paths: []string{eq}, Fields: trace.Fields{Input: "prompt_tokens", Output: "completion_tokens"}}.Run(&strings.Builder{}, write)
	if err == nil || err.Error() != eq+":2-4: prompt lengths (prompt_tokens): every length is the same: all 3 are 100 tokens" {
		t.Errorf("all equal: %v", err)
	}
	three := writeLog(t, dir, "three.csv", "input_length\n100\n200\n350\n")
	var out strings.Builder
	gs, err := Command{Paths: []string{three}}.Run(&out, write)
	if err != nil {
		t.Fatal(err)
	}
	k := gs[0].Input.Get(Gamma).Param("k")
	want := fmt.Sprintf("no bench.toml settings for the prompt lengths (input_length): 3 lengths are too few to suggest [lengths] settings: gamma's k = %.3g has the 95 %% interval [%.4g, %.4g], a factor %.3g wide (more than 2); fit a larger log.", k.Value, k.Lo, k.Hi, k.Hi/k.Lo)
	if !strings.Contains(out.String(), want) || strings.Contains(out.String(), "[lengths.config]") {
		t.Errorf("want %q and no settings in\n%s", want, out.String())
	}
	var big strings.Builder
	big.WriteString("input_length\n")
	for _, x := range gammaSample(0.9, 4000, 400, 3) {
		fmt.Fprintf(&big, "%d\n", int(x)+1)
	}
	out.Reset()
	if _, err := (Command{Paths: []string{writeLog(t, dir, "big.csv", big.String())}}).Run(&out, write); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "[lengths.config]\n    k = ") || strings.Contains(out.String(), "too few") {
		t.Errorf("400 lengths:\n%s", out.String())
	}
}
