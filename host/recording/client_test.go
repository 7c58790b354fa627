package recording

import (
	"strings"
	"testing"
	"time"
)

func TestClientLoadBottleneck(t *testing.T) {
	cases := []struct {
		name string
		l    *ClientLoad
		itl  time.Duration
		want string // "" = no bottleneck
	}{
		{"nil", nil, 0, ""},
		{"quiet", &ClientLoad{WriteShare: 0.005, CPUShare: 0.4, SchedP99: 200 * time.Microsecond}, 10 * time.Millisecond, ""},
		{"a slow body write is not a bottleneck", &ClientLoad{WriteShare: 0.9, WriteRequest: 3, Write: 200 * time.Millisecond}, 0, ""},
		{"CPU saturated", &ClientLoad{CPUShare: 0.95, Cores: 2, CPU: 1900 * time.Millisecond, Wall: time.Second}, 0, "genload's process used 95 % of its 2 cores"},
		{"CPU below the share", &ClientLoad{CPUShare: 0.89, Cores: 2}, 0, ""},
		{"reads fell behind", &ClientLoad{SchedP99: 2 * time.Millisecond, SchedP50: 10 * time.Microsecond}, 10 * time.Millisecond, "waited up to 2.0 ms (p99; p50 0.0 ms) for a CPU"},
		{"sched under a tenth of the step", &ClientLoad{SchedP99: 2 * time.Millisecond}, 50 * time.Millisecond, ""},
		{"sched with no step known", &ClientLoad{SchedP99: time.Millisecond}, 0, "reads fell behind"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.l.Bottleneck(tc.itl)
			if tc.want == "" {
				if got != "" {
					t.Fatalf("bottleneck %q, want none", got)
				}
				return
			}
			if !strings.HasPrefix(got, "the client was the bottleneck: ") || !strings.Contains(got, tc.want) || !strings.Contains(got, "not the server's or Nagle's") {
				t.Fatalf("bottleneck %q, want it to contain %q", got, tc.want)
			}
		})
	}
}

// A body write is reported against the cell's TTFT p50 only when it is a material share of it
// and not the system call alone.
func TestClientLoadBodyWrite(t *testing.T) {
	cases := []struct {
		name string
		l    *ClientLoad
		ttft time.Duration
		want string // "" = none
	}{
		{"nil", nil, 10 * time.Millisecond, ""},
		{"a clean server's 0.5 ms of a 12 ms TTFT", &ClientLoad{WriteRequest: 0, Write: 500 * time.Microsecond}, 12 * time.Millisecond, ""},
		{"just over 5 %", &ClientLoad{WriteRequest: 3, Write: 2 * time.Millisecond, Build: 40 * time.Millisecond}, 25 * time.Millisecond,
			"writing the body of request 3 took 2.0 ms, 8.0 % of the cell's TTFT p50 25.0 ms (building every body took 40.0 ms): TTFT includes it, fwd, ITL and the chunk timings do not (the write ended before the first token); a slow client or a server that reads its requests slowly"},
		{"exactly 5 % is not material", &ClientLoad{WriteRequest: 0, Write: time.Millisecond}, 20 * time.Millisecond, ""},
		{"a short write whatever the TTFT", &ClientLoad{WriteRequest: 0, Write: 90 * time.Microsecond}, 200 * time.Microsecond, ""},
		{"no request streamed", &ClientLoad{WriteRequest: -1, Write: 5 * time.Millisecond}, 10 * time.Millisecond, ""},
		{"no TTFT", &ClientLoad{WriteRequest: 0, Write: 5 * time.Millisecond}, 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.l.BodyWrite(tc.ttft, 0.05); got != tc.want {
				t.Fatalf("body write %q, want %q", got, tc.want)
			}
		})
	}
}
