package recording

import (
	"fmt"
	"strings"
	"time"
)

// ClientLoad is what the client itself spent on a plan (dispatch.Client.Do), so that a cell
// can tell the client's limits from the server's: the time to build and to write the request
// bodies, the process's CPU share while the streams ran, and how long its runnable goroutines
// waited for a CPU (a read that waits so stamps its chunks late).
type ClientLoad struct {
	// Build is the time to build every request body of the plan, before Result.Start (a
	// body over 16 MB is generated as it is written: its generation is in its Request.Write).
	Build time.Duration `json:"build_ns"`
	// Sent is when the last request's body was all written (max over the requests of
	// Request.Sent + Request.Write, from Result.Start): Build + Sent is the client's time to
	// put the plan on the wire. BodyBytes sums the requests' bodies.
	Sent      time.Duration `json:"sent_ns"`
	BodyBytes int64         `json:"body_bytes"`
	// WriteShare is the largest, over the requests that streamed a token, of Request.Write
	// divided by the request's time to its first token (first mark − Sent); WriteRequest is
	// that request's index (−1 when no request streamed a token).
	WriteShare   float64       `json:"write_share"`
	WriteRequest int           `json:"write_request"`
	Write        time.Duration `json:"write_ns"` // that request's Request.Write
	// CPU is the user+system CPU of the whole process (getrusage RUSAGE_SELF) from
	// Result.Start to the end of the last stream, Wall that span, and Cores the cores it could
	// use (min(GOMAXPROCS, CPUs)); CPUShare = CPU / (Wall × Cores).
	CPU      time.Duration `json:"cpu_ns"`
	Wall     time.Duration `json:"wall_ns"`
	Cores    int           `json:"cores"`
	CPUShare float64       `json:"cpu_share"`
	// SchedP50 and SchedP99 are quantiles of the time the process's goroutines spent runnable
	// before running during the plan (the Go runtime's /sched/latencies:seconds, bucket upper
	// bounds); a stream's goroutine woken by its bytes waits that long before it stamps them.
	SchedP50 time.Duration `json:"sched_p50_ns"`
	SchedP99 time.Duration `json:"sched_p99_ns"`
}

// Thresholds of ClientLoad.Bottleneck and ClientLoad.BodyWrite.
const (
	// BottleneckWrite: a body write shorter than this is the system call itself, whatever
	// the TTFT, and is never reported.
	BottleneckWrite = 100 * time.Microsecond
	// BottleneckCPUShare: the process used at least 90 % of the cores it could use.
	BottleneckCPUShare = 0.9
	// BottleneckSched: the p99 wait of a runnable goroutine was at least 1 ms (and at least a
	// tenth of the median inter-chunk interval).
	BottleneckSched = time.Millisecond
)

// BodyWrite says, when writing a request's body took a material share of the cell's TTFT,
// how much: the write of the request with the largest write share (WriteRequest, Write)
// against ttft, the cell's reported TTFT p50, when Write ≥ BottleneckWrite and Write / ttft
// exceeds material (a fraction: 0.05 = 5 %). A write ends before its request's first token
// (the server needs the whole prompt to prefill it), so it can lengthen TTFT only — by at
// most Write, which bounds its share of the p50 — never a decode interval, fwd or ITL; and
// its time is the client's or the server's reading of the body (a server that reads slowly
// holds the write). It returns "" when the share is not material, ttft ≤ 0, or for a nil
// ClientLoad.
func (l *ClientLoad) BodyWrite(ttft time.Duration, material float64) string {
	if l == nil || ttft <= 0 || l.WriteRequest < 0 || l.Write < BottleneckWrite {
		return ""
	}
	share := float64(l.Write) / float64(ttft)
	if share <= material {
		return ""
	}
	return fmt.Sprintf("writing the body of request %d took %s, %.1f %% of the cell's TTFT p50 %s (building every body took %s): TTFT includes it, fwd, ITL and the chunk timings do not (the write ended before the first token); a slow client or a server that reads its requests slowly",
		l.WriteRequest, ms(l.Write), 100*share, ms(ttft), ms(l.Build))
}

// Bottleneck says, when the client limited the cell's chunk timings, how: a process that used
// at least BottleneckCPUShare of its cores, or runnable goroutines that waited at least
// BottleneckSched at p99 and a tenth of itl, the median inter-chunk interval (0 = unknown: the
// floor alone applies), so that reads fell behind the streams. A slow body write is not one:
// it delays the first token only (BodyWrite). It returns "" when none applies, and for a nil
// ClientLoad.
func (l *ClientLoad) Bottleneck(itl time.Duration) string {
	if l == nil {
		return ""
	}
	var why []string
	if l.CPUShare >= BottleneckCPUShare {
		why = append(why, fmt.Sprintf("genload's process used %.0f %% of its %d cores (%s of CPU in %s)", 100*l.CPUShare, l.Cores, ms(l.CPU), ms(l.Wall)))
	}
	if l.SchedP99 >= BottleneckSched && (itl == 0 || l.SchedP99 >= itl/10) {
		why = append(why, fmt.Sprintf("its goroutines waited up to %s (p99; p50 %s) for a CPU after their bytes arrived, so reads fell behind the streams", ms(l.SchedP99), ms(l.SchedP50)))
	}
	if len(why) == 0 {
		return ""
	}
	return "the client was the bottleneck: " + strings.Join(why, "; ") +
		": the cell's TTFT and chunk timings include the client's own delay; a late first chunk or a slow step here is the client's, not the server's or Nagle's (a faster or less loaded client host measures the server)"
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/1e6) }
