package perf

import (
	"slices"
	"strconv"
	"time"
)

// ClientReport is what a client process of the paced-stream rows prints on stdout (one JSON
// line): its own CPU while streaming and the timestamp error of every token chunk.
type ClientReport struct {
	Client string `json:"client"`
	Mode   string `json:"mode"`
	N      int    `json:"n"`
	// Tokens is the token chunks read (N × max_tokens when every stream completed).
	Tokens int `json:"tokens"`
	// StreamCPUNS is the process's user+system CPU from just before the first request to the
	// end of the last stream (getrusage RUSAGE_SELF), ns: start-up is left out.
	StreamCPUNS int64 `json:"stream_cpu_ns"`
	// WallNS is the wall time of that span, ns.
	WallNS int64 `json:"wall_ns"`
	// Timestamp error (arrival stamp − the server's send stamp) quantiles, µs.
	ErrP50US float64 `json:"err_p50_us"`
	ErrP99US float64 `json:"err_p99_us"`
	ErrMaxUS float64 `json:"err_max_us"`
}

// NewClientReport summarises a client's streams: errs holds one arrival − send per token
// chunk (its order is not kept).
func NewClientReport(client, mode string, n, tokens int, cpu, wall time.Duration, errs []time.Duration) ClientReport {
	r := ClientReport{Client: client, Mode: mode, N: n, Tokens: len(errs), StreamCPUNS: cpu.Nanoseconds(), WallNS: wall.Nanoseconds()}
	if len(errs) > 0 {
		slices.Sort(errs)
		r.ErrP50US = float64(quantileDur(errs, 0.5)) / 1e3
		r.ErrP99US = float64(quantileDur(errs, 0.99)) / 1e3
		r.ErrMaxUS = float64(errs[len(errs)-1]) / 1e3
	}
	return r
}

// ParseStamp reads a send stamp (StampWidth digits of Unix ns) as a Duration since the
// epoch; a malformed stamp reads as 0 (a huge error that shows).
func ParseStamp(b []byte) time.Duration {
	v, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return 0
	}
	return time.Duration(v)
}

// PacedBody is the /v1/completions body every client of the paced-stream rows sends: per
// prompts of plen token ids starting at prompt first (ids distinct per prompt), max_tokens
// tokens, streamed. array sends the prompts as one array of arrays (per ≥ 1); otherwise per
// must be 1 and the prompt is one array.
func PacedBody(first, per, plen, tokens int, array bool) []byte {
	b := []byte(`{"model":"paced","prompt":`)
	if array {
		b = append(b, '[')
	}
	for i := range per {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		for k := range plen {
			if k > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(1000+((first+i)*plen+k)%150000), 10)
		}
		b = append(b, ']')
	}
	if array {
		b = append(b, ']')
	}
	b = append(b, `,"max_tokens":`...)
	b = strconv.AppendInt(b, int64(tokens), 10)
	return append(b, `,"temperature":0,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`...)
}
