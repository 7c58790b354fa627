package dispatch

// PERF.md row 2 — timestamp accuracy: the server stamps its send time into each chunk's text
// (perf.StampWidth digits of Unix ns); the client's arrival stamp minus it is the timestamp
// error. Two scenarios, each client in the same run:
//   step20ms: 512 streams emit one chunk each per global 20 ms tick (a batched decode step)
//   paced1ms: 64 streams each emit a chunk every 1 ms
// Reported: p50 and p99 of (receive − send) in µs. Here server and client share the process
// (and the 2 cores), the same for every client; BenchmarkPerfSplitTimestampError runs the same
// clients against a server in another process. Run with -benchtime 1x.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fastjson"

	"github.com/genload/genload/host/perf"
)

// unixNow is the arrival stamp, comparable with the server's Unix-ns send stamps.
func unixNow() time.Duration { return time.Duration(time.Now().UnixNano()) }

func parseTS(b []byte) time.Duration {
	v, _ := strconv.ParseInt(string(b), 10, 64)
	return time.Duration(v)
}

func reportErrors(b *testing.B, errs []time.Duration) {
	slices.Sort(errs)
	q := func(p float64) float64 {
		i := min(len(errs)-1, max(0, int(p*float64(len(errs))+0.5)-1))
		return float64(errs[i]) / 1e3
	}
	b.ReportMetric(q(0.50), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
	b.ReportMetric(float64(len(errs)), "samples")
}

// timestampScenarios are the two shapes of row 2.
var timestampScenarios = []struct {
	name, env string
	c, n      int
}{
	{"step20ms/C=512/N=20", "GENLOAD_PERF_STEP20MS", 512, 20},
	{"paced1ms/C=64/N=200", "GENLOAD_PERF_PACED1MS", 64, 200},
}

func BenchmarkTimestampError(b *testing.B) {
	for _, sc := range timestampScenarios {
		wait, stop := func(int) { time.Sleep(time.Millisecond) }, func() {}
		if sc.env == "GENLOAD_PERF_STEP20MS" {
			wait, stop = perf.StepWait(20 * time.Millisecond)
		}
		srv, err := perf.NewPacedServer("127.0.0.1:0", sc.n, wait)
		if err != nil {
			b.Fatal(err)
		}
		timestampClients(b, sc.name, srv.Addr(), sc.c, sc.n)
		stop()
		srv.Close()
	}
}

// timestampClients runs genload's client, net/http + encoding/json and raw TCP + fastjson,
// each with c concurrent streams of n stamped chunks from the paced server at addr, and
// reports each one's timestamp error.
func timestampClients(b *testing.B, name, addr string, c, n int) {
	b.Run("genload/"+name, func(b *testing.B) {
		cl, err := New(Options{Target: "http://" + addr, KeepText: true})
		if err != nil {
			b.Fatal(err)
		}
		defer cl.Close()
		prompts := make([][]int32, c)
		for i := range prompts {
			prompts[i] = []int32{1}
		}
		var errs []time.Duration
		for range b.N {
			res, err := cl.Send(context.Background(), ModeRouted, prompts, n)
			if err != nil || res.Err() != nil {
				b.Fatal(err, res.Err())
			}
			origin := time.Duration(res.Start.UnixNano())
			for _, s := range res.Sequences {
				for k, m := range s.Marks.All() {
					errs = append(errs, origin+m.At-parseTS(s.Text[k*perf.StampWidth:(k+1)*perf.StampWidth]))
				}
			}
		}
		reportErrors(b, errs)
	})
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024}}
	defer hc.CloseIdleConnections()
	u := "http://" + addr + "/v1/completions"
	streams(b, "nethttp/"+name, c, func() ([]time.Duration, error) { return nethttpStampErrors(hc, u, unixNow) })
	pool := &rawPool{addr: addr}
	defer pool.close()
	streams(b, "raw/"+name, c, func() ([]time.Duration, error) {
		rc := pool.get()
		defer pool.put(rc)
		return rawStampErrors(rc, unixNow)
	})
}

// streams runs a sub-benchmark that reads c concurrent streams with one, b.N times, and
// reports the timestamp errors it collected.
func streams(b *testing.B, name string, c int, one func() ([]time.Duration, error)) {
	b.Run(name, func(b *testing.B) {
		var mu sync.Mutex
		var errs []time.Duration
		for range b.N {
			var wg sync.WaitGroup
			for range c {
				wg.Go(func() {
					local, err := one()
					if err != nil {
						b.Error(err)
						return
					}
					mu.Lock()
					errs = append(errs, local...)
					mu.Unlock()
				})
			}
			wg.Wait()
		}
		reportErrors(b, errs)
	})
}

// rawStampErrors sends rawReq on rc, reads the response with the raw client (status line and
// headers, then Content-Length bytes of SSE lines) and returns, per data event, now() taken
// when its line was read minus the server's send stamp carried in the event's text.
func rawStampErrors(rc *rawConn, now func() time.Duration) ([]time.Duration, error) {
	if _, err := rc.c.Write(rawReq); err != nil {
		return nil, err
	}
	cl := 0
	for {
		line, err := rc.br.ReadSlice('\n')
		if err != nil {
			return nil, err
		}
		if len(line) <= 2 {
			break
		}
		if bytes.HasPrefix(line, []byte("Content-Length: ")) {
			cl, _ = strconv.Atoi(string(bytes.TrimSpace(line[16:])))
		}
	}
	var out []time.Duration
	var p fastjson.Parser
	for read := 0; read < cl; {
		line, err := rc.br.ReadSlice('\n')
		if err != nil {
			return nil, err
		}
		read += len(line)
		if !bytes.HasPrefix(line, []byte("data: {")) {
			continue
		}
		t := now()
		v, err := p.ParseBytes(line[6 : len(line)-1])
		if err != nil {
			return nil, err
		}
		out = append(out, t-parseTS(v.GetArray("choices")[0].GetStringBytes("text")))
	}
	return out, nil
}

// nethttpStampErrors posts benchBody to u with the net/http baseline client (bufio.Scanner,
// encoding/json) and returns, per data event, now() taken when its line was scanned minus the
// server's send stamp carried in the event's text.
func nethttpStampErrors(hc *http.Client, u string, now func() time.Duration) ([]time.Duration, error) {
	resp, err := hc.Post(u, "application/json", bytes.NewReader(benchBody))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	var out []time.Duration
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, []byte("data: {")) {
			continue
		}
		t := now()
		var c struct {
			Choices []struct {
				Text string `json:"text"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(line[6:], &c); err != nil {
			return nil, err
		}
		out = append(out, t-parseTS([]byte(c.Choices[0].Text)))
	}
	return out, sc.Err()
}
