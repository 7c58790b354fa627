package clock

import (
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

// BenchmarkWakeLate measures how late a wait for an instant returns, by SleepUntil and by
// HoldUntil, while the process's Ps are busy the way the built-in engine keeps them: every
// millisecond one goroutine wakes 40 others, each of which works 10 µs (a token written to
// each of 40 streams: 0.4 of a core in all, in bursts). 200 waits, 5 ms apart, one benchmark iteration
// each; it reports late-p50-us, late-p99-us and late-max-us (time.Now after the wait minus the
// deadline) and over-1ms (waits more than 1 ms late). Run with -benchtime 1x.
func BenchmarkWakeLate(b *testing.B) {
	for _, c := range []struct {
		name string
		wait func(time.Time, <-chan struct{}) bool
	}{{"SleepUntil", SleepUntil}, {"HoldUntil", HoldUntil}} {
		b.Run(c.name, func(b *testing.B) {
			stop := make(chan struct{})
			var wg sync.WaitGroup
			burst(stop, &wg)
			defer wg.Wait()
			defer close(stop)
			var late []float64
			for b.Loop() {
				late = late[:0]
				next := time.Now().Add(10 * time.Millisecond)
				for range 200 {
					c.wait(next, nil)
					late = append(late, float64(time.Since(next).Microseconds()))
					next = next.Add(5 * time.Millisecond)
				}
			}
			slices.Sort(late)
			over := 0
			for _, l := range late {
				if l > 1000 {
					over++
				}
			}
			b.ReportMetric(late[len(late)/2], "late-p50-us")
			b.ReportMetric(late[len(late)*99/100], "late-p99-us")
			b.ReportMetric(late[len(late)-1], "late-max-us")
			b.ReportMetric(float64(over), "over-1ms")
		})
	}
}

// burst starts the load of BenchmarkWakeLate until stop closes: a loop that every
// millisecond hands 40 workers 10 µs of work each.
func burst(stop <-chan struct{}, wg *sync.WaitGroup) {
	const workers = 40
	work := make([]chan struct{}, workers)
	for i := range work {
		work[i] = make(chan struct{}, 1)
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				case <-work[i]:
					for t := time.Now(); time.Since(t) < 10*time.Microsecond; {
					}
				}
			}
		})
	}
	wg.Go(func() {
		runtime.LockOSThread()
		for next := time.Now(); ; next = next.Add(time.Millisecond) {
			select { // SleepUntil looks at stop only for waits over 3 ms
			case <-stop:
				return
			default:
			}
			SleepUntil(next, stop)
			for _, w := range work {
				select {
				case w <- struct{}{}:
				default:
				}
			}
		}
	})
}
