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
		{"body send over 1 % of TTFT", &ClientLoad{WriteShare: 0.02, WriteRequest: 3, Write: 2 * time.Millisecond, Build: 40 * time.Millisecond}, 0, "writing the body of request 3 took 2.0 ms, 2.0 % of its time to first token (building every body took 40.0 ms)"},
		{"a short write is not a bottleneck", &ClientLoad{WriteShare: 0.02, Write: 90 * time.Microsecond}, 0, ""},
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
