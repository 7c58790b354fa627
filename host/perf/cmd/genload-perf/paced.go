package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/genload/genload/host/dispatch"
	"github.com/genload/genload/host/perf"
)

// pacedServe is the server process of the paced-stream rows: one perf.StepServer per step of
// -steps on loopback; it prints one STEP<µs>US=host:port line per server, then "READY", and
// serves until its standard input closes.
func pacedServe(args []string) error {
	fs := flag.NewFlagSet("paced-serve", flag.ContinueOnError)
	steps := fs.String("steps", "1ms,2ms,10ms", "comma-separated step lengths, one server each")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var servers []*perf.StepServer
	defer func() {
		for _, s := range servers {
			_ = s.Close()
		}
	}()
	for _, f := range strings.Split(*steps, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(f))
		if err != nil {
			return fmt.Errorf("-steps %q: %w", f, err)
		}
		s, err := perf.NewStepServer("127.0.0.1:0", d)
		if err != nil {
			return err
		}
		servers = append(servers, s)
		fmt.Printf("%s=%s\n", perf.StepEnv(d), s.Addr())
	}
	fmt.Println("READY")
	_, _ = io.Copy(io.Discard, os.Stdin)
	return nil
}

// pacedClient is genload's client in the paced-stream rows: host/dispatch's Client as a run
// configures it (continuous usage, stall detection of 20 steps and at least 10 s, a 10-minute
// first-token timeout), keeping the chunks' text only to read the send stamps in it. It sends
// the streams with one Send and prints a perf.ClientReport.
func pacedClient(args []string) error {
	fs := flag.NewFlagSet("paced-client", flag.ContinueOnError)
	u := fs.String("url", "", "server base URL, http://host:port")
	mode := fs.String("mode", "routed", "routed or array")
	n := fs.Int("n", 64, "streams (sequences)")
	tokens := fs.Int("tokens", 200, "max_tokens per sequence")
	plen := fs.Int("prompt-len", 16, "token ids per prompt")
	cpuProf := fs.String("cpuprofile", "", "write a CPU profile of the streaming to FILE")
	memProf := fs.String("memprofile", "", "write an allocation profile (every allocation sampled) at the end to FILE")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *memProf != "" {
		runtime.MemProfileRate = 1
	}
	m := dispatch.ModeRouted
	switch *mode {
	case "routed":
	case "array":
		m = dispatch.ModeArray
	default:
		return fmt.Errorf("-mode %q: want routed or array", *mode)
	}
	cl, err := dispatch.New(dispatch.Options{Target: *u, KeepText: true, ContinuousUsage: true,
		StallSteps: 20, StallMin: 10 * time.Second, FirstTokenTimeout: 10 * time.Minute})
	if err != nil {
		return err
	}
	defer cl.Close()
	prompts := make([][]int32, *n)
	for i := range prompts {
		p := make([]int32, *plen)
		for k := range p {
			p[k] = int32(1000 + (i**plen+k)%150000)
		}
		prompts[i] = p
	}
	if *cpuProf != "" {
		f, err := os.Create(*cpuProf)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
	}
	var ru0, ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	t0 := time.Now()
	res, err := cl.Send(context.Background(), m, prompts, *tokens)
	wall := time.Since(t0)
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	if *cpuProf != "" {
		pprof.StopCPUProfile()
	}
	if *memProf != "" {
		f, err := os.Create(*memProf)
		if err != nil {
			return err
		}
		if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
			return err
		}
		f.Close()
	}
	if err != nil {
		return err
	}
	if err := res.Err(); err != nil {
		return err
	}
	origin := time.Duration(res.Start.UnixNano())
	errs := make([]time.Duration, 0, *n**tokens)
	for _, s := range res.Sequences {
		for k, mk := range s.Marks.All() {
			if (k+1)*perf.StampWidth > len(s.Text) {
				return fmt.Errorf("sequence %d: text of %d bytes for %d marks", s.Index, len(s.Text), s.Marks.Len())
			}
			errs = append(errs, origin+mk.At-perf.ParseStamp(s.Text[k*perf.StampWidth:(k+1)*perf.StampWidth]))
		}
	}
	if len(errs) != *n**tokens {
		return fmt.Errorf("%d token chunks, want %d", len(errs), *n**tokens)
	}
	cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
	return json.NewEncoder(os.Stdout).Encode(perf.NewClientReport("genload", *mode, *n, *tokens, cpu, wall, errs))
}
