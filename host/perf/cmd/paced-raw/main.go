// Command paced-raw is the floor of the paced-stream rows (PERF.md): the least a Go client
// can do to read the streams of host/perf's StepServer and stamp every chunk. It opens one
// TCP connection per request (routed: N requests of one prompt; array: one request of N
// prompts), writes a prebuilt request, reads the response through one bufio.Reader, undoes
// the chunked encoding (it relies on the server's chunks ending at line ends, which the
// StepServer's do), stamps every `data:` line with time.Now when it is read, parses it with
// fastjson and keeps the stamp minus the send time the chunk's text carries. It prints one
// JSON line (perf.ClientReport) on stdout.
//
//	paced-raw -url http://127.0.0.1:PORT -mode routed -n 64 -tokens 200
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/genload/genload/host/perf"
	"github.com/valyala/fastjson"
)

func main() {
	u := flag.String("url", "", "server base URL, http://host:port")
	mode := flag.String("mode", "routed", "routed (N requests of one prompt) or array (one request of N prompts)")
	n := flag.Int("n", 64, "streams (sequences)")
	tokens := flag.Int("tokens", 200, "max_tokens per sequence")
	plen := flag.Int("prompt-len", 16, "token ids per prompt")
	flag.Parse()
	rep, err := run(*u, *mode, *n, *tokens, *plen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "paced-raw:", err)
		os.Exit(1)
	}
	_ = json.NewEncoder(os.Stdout).Encode(rep)
}

func run(base, mode string, n, tokens, plen int) (perf.ClientReport, error) {
	pu, err := url.Parse(base)
	if err != nil || pu.Host == "" {
		return perf.ClientReport{}, fmt.Errorf("-url %q: want http://host:port", base)
	}
	reqs, per := n, 1
	if mode == "array" {
		reqs, per = 1, n
	} else if mode != "routed" {
		return perf.ClientReport{}, fmt.Errorf("-mode %q: want routed or array", mode)
	}
	var ru0 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	start := time.Now()
	errs := make([][]time.Duration, reqs)
	fails := make([]error, reqs)
	var wg sync.WaitGroup
	for r := range reqs {
		wg.Go(func() {
			errs[r], fails[r] = stream(pu.Host, perf.PacedBody(r*per, per, plen, tokens, mode == "array"), tokens*per)
		})
	}
	wg.Wait()
	wall := time.Since(start)
	var ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	if err := errors.Join(fails...); err != nil {
		return perf.ClientReport{}, err
	}
	var all []time.Duration
	for _, e := range errs {
		all = append(all, e...)
	}
	cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
	return perf.NewClientReport("raw", mode, n, tokens, cpu, wall, all), nil
}

// stream sends one request and returns, per token chunk, its arrival stamp minus its send
// stamp; want is the number of token chunks expected.
func stream(addr string, body []byte, want int) ([]time.Duration, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	req := append([]byte("POST /v1/completions HTTP/1.1\r\nHost: "+addr+"\r\nContent-Type: application/json\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"), body...)
	if _, err := c.Write(req); err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(c, 16<<10)
	line, err := br.ReadSlice('\n')
	if err != nil {
		return nil, err
	}
	if !bytes.Contains(line, []byte(" 200 ")) {
		return nil, fmt.Errorf("status %q", bytes.TrimSpace(line))
	}
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return nil, err
		}
		if len(line) <= 2 {
			break
		}
	}
	out := make([]time.Duration, 0, want)
	var p fastjson.Parser
	for {
		// one chunk of the chunked encoding: its size line, then lines up to its size
		line, err := br.ReadSlice('\n')
		if err != nil {
			return nil, err
		}
		size, err := strconv.ParseInt(string(bytes.TrimSpace(line)), 16, 64)
		if err != nil {
			return nil, fmt.Errorf("chunk size %q: %w", line, err)
		}
		if size == 0 {
			break
		}
		for read := int64(0); read < size; {
			line, err := br.ReadSlice('\n')
			if err != nil {
				return nil, err
			}
			read += int64(len(line))
			if !bytes.HasPrefix(line, []byte("data: {")) {
				continue
			}
			now := time.Duration(time.Now().UnixNano())
			v, err := p.ParseBytes(line[6 : len(line)-1])
			if err != nil {
				return nil, err
			}
			for _, ch := range v.GetArray("choices") {
				if t := ch.GetStringBytes("text"); len(t) > 0 {
					out = append(out, now-perf.ParseStamp(t))
				}
			}
		}
		if _, err := br.Discard(2); err != nil { // the chunk's CRLF
			return nil, err
		}
	}
	if len(out) != want {
		return nil, fmt.Errorf("%d token chunks, want %d", len(out), want)
	}
	return out, nil
}
