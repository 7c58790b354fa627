package dispatch

import (
	"runtime"
	"runtime/metrics"
	"syscall"
	"time"

	"github.com/genload/genload/host/recording"
)

// ClientLoad is the recording type: see recording.ClientLoad.
type ClientLoad = recording.ClientLoad

// loadProbe samples what the process itself spends during a Do: its CPU (getrusage) and the
// Go scheduler's latency histogram, at the start and at the end.
type loadProbe struct {
	ru0    syscall.Rusage
	sched0 []uint64
	t0     time.Time
	sample []metrics.Sample
}

// schedMetric is the runtime/metrics histogram of how long runnable goroutines waited to run.
const schedMetric = "/sched/latencies:seconds"

// startLoad takes the first sample of a Do's load: the scheduler latency histogram, the
// process's CPU times (getrusage) and the wall clock.
func startLoad() *loadProbe {
	p := &loadProbe{sample: []metrics.Sample{{Name: schedMetric}}}
	metrics.Read(p.sample)
	if h := p.sample[0].Value; h.Kind() == metrics.KindFloat64Histogram {
		p.sched0 = append([]uint64(nil), h.Float64Histogram().Counts...)
	}
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &p.ru0)
	p.t0 = time.Now()
	return p
}

// finish fills the load of res: CPU, wall and cores since startLoad, the scheduler latency
// quantiles of that span and the largest write share of a request's TTFT.
func (p *loadProbe) finish(res *Result, build time.Duration) {
	wall := time.Since(p.t0)
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	l := &res.Client
	l.Build, l.Wall = build, wall
	l.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano() - p.ru0.Utime.Nano() - p.ru0.Stime.Nano())
	l.Cores = max(1, min(runtime.GOMAXPROCS(0), runtime.NumCPU()))
	if wall > 0 {
		l.CPUShare = l.CPU.Seconds() / (wall.Seconds() * float64(l.Cores))
	}
	metrics.Read(p.sample)
	if h := p.sample[0].Value; h.Kind() == metrics.KindFloat64Histogram && p.sched0 != nil {
		hist := h.Float64Histogram()
		if len(hist.Counts) == len(p.sched0) {
			d := make([]uint64, len(hist.Counts))
			for i := range d {
				d[i] = hist.Counts[i] - p.sched0[i]
			}
			l.SchedP50, l.SchedP99 = histQuantile(d, hist.Buckets, 0.5), histQuantile(d, hist.Buckets, 0.99)
		}
	}
	for _, rq := range res.Requests {
		l.Sent = max(l.Sent, rq.Sent+rq.Write)
		l.BodyBytes += int64(rq.BodyBytes)
	}
	l.WriteShare, l.WriteRequest = writeShare(res)
	if l.WriteRequest >= 0 {
		l.Write = res.Requests[l.WriteRequest].Write
	}
}

// histQuantile returns the upper bound of the bucket holding the q-quantile of counts
// (buckets[i], buckets[i+1]) in seconds, as a Duration; 0 for an empty histogram.
func histQuantile(counts []uint64, buckets []float64, q float64) time.Duration {
	var total uint64
	for _, c := range counts {
		total += c
	}
	if total == 0 {
		return 0
	}
	rank := uint64(q*float64(total) + 0.5)
	rank = max(rank, 1)
	var seen uint64
	for i, c := range counts {
		seen += c
		if seen >= rank {
			hi := buckets[i+1]
			if hi > 1e9 { // the last bucket is unbounded: its lower bound
				hi = buckets[i]
			}
			return time.Duration(hi * 1e9)
		}
	}
	return 0
}

// writeShare returns the largest Write / TTFT over the requests that streamed a token (TTFT
// from the request's send to its first token chunk) and that request's index (−1 if none).
func writeShare(res *Result) (float64, int) {
	first := make([]time.Duration, len(res.Requests))
	for i := range first {
		first[i] = -1
	}
	for _, s := range res.Sequences {
		if s.Marks.Len() == 0 || s.Request < 0 || s.Request >= len(first) {
			continue
		}
		if at := s.Marks.At(0); first[s.Request] < 0 || at < first[s.Request] {
			first[s.Request] = at
		}
	}
	best, which := 0.0, -1
	for i, rq := range res.Requests {
		ttft := first[i] - rq.Sent
		if first[i] < 0 || ttft <= 0 || rq.Write <= 0 {
			continue
		}
		if sh := float64(rq.Write) / float64(ttft); which < 0 || sh > best {
			best, which = sh, i
		}
	}
	return best, which
}
