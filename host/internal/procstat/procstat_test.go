package procstat

import (
	"math"
	"strings"
	"testing"
)

// The fields of a real line (kernel 6.1, 2 vCPUs), summed by hand: guest and guest_nice are
// left out of the total, steal is the eighth field.
func TestParseAFirstLine(t *testing.T) {
	c, err := parse([]byte("cpu  1000 20 300 5000 40 6 7 80 900 10\ncpu0 1 2 3 4 5 6 7 8 9 10\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := (CPU{Total: 1000 + 20 + 300 + 5000 + 40 + 6 + 7 + 80, Busy: 1000 + 20 + 300 + 6 + 7 + 80, Steal: 80}); c != want {
		t.Fatalf("got %+v, want %+v", c, want)
	}
	busy, steal := c.Since(CPU{Total: c.Total - 200, Busy: c.Busy - 50, Steal: c.Steal - 10}, 2)
	if math.Abs(busy-0.5) > 1e-12 || math.Abs(steal-0.05) > 1e-12 {
		t.Fatalf("Since: %v cores, steal %v; want 0.5, 0.05", busy, steal)
	}
}

func TestParseSaysWhatIsWrong(t *testing.T) {
	for _, in := range []string{"intr 1 2 3\n", "cpu 1 2 x 4 5 6\n", "cpu 1 2\n"} {
		_, err := parse([]byte(in))
		if err == nil || !strings.Contains(err.Error(), "/proc/stat") || !strings.Contains(err.Error(), strings.TrimSpace(in)[:5]) {
			t.Errorf("%q: error %v", in, err)
		}
	}
}

// The machine running the test has a /proc/stat whose figures add up.
func TestReadThisMachine(t *testing.T) {
	c, err := Read()
	if err != nil {
		t.Skip("no /proc/stat here:", err)
	}
	if c.Total == 0 || c.Busy > c.Total || c.Steal > c.Busy {
		t.Fatalf("implausible %+v", c)
	}
}
