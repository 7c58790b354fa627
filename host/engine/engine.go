// Package engine is genload's built-in OpenAI-compatible serving-engine simulator: the default
// target of a run and the ground truth of the measurement tests.
//
// It serves /v1/completions (all four prompt forms, n, streaming with usage), /v1/models,
// /health, /tokenize, /detokenize, /metrics and /reset_prefix_cache on loopback, in the vLLM
// (≥ 0.10.1) dialect by default. A continuous-batching scheduler goroutine runs engine steps
// (forward passes): each running sequence gains one token per decode step, new sequences join
// at step boundaries with chunked prefill under a per-step token budget, a block-granular prefix
// cache makes warmed-up prompts cheap, and a full KV cache preempts the newest sequence. Each
// step's duration comes from a cost model (see Profile) and is slept, scaled by
// Config.TimeScale, against the monotonic clock.
//
// The engine never imports genload's client packages, nor fasthttp.
package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Engine is a running simulated serving engine. Create it with New, serve Handler (or call
// Start), and Close it.
type Engine struct {
	cfg     Config
	wire    dialect // cfg's wire behaviour (wireFor)
	profile Profile
	tok     Tokenizer
	vocab   vocab
	metrics *metrics
	sched   *scheduler
	created int64

	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
	reqSeq   atomic.Uint64
	faultSeq atomic.Uint64
	// quirkSeqs counts sequences of requests with max_tokens ≥ 2 (Quirks.ZeroToken);
	// quirkEarly counts requests with max_tokens > Quirks.EarlyStop.
	quirkSeqs  atomic.Uint64
	quirkEarly atomic.Uint64
	reqNum     atomic.Uint64 // completion requests, for Config.SeqLog
	// startedAt is when New ran; event times are monotonic offsets from it.
	startedAt time.Time

	mu  sync.Mutex
	srv *http.Server

	stepFile *os.File // Config.StepLogFile, closed by Close
}

// New validates cfg, loads its profile and starts the scheduler goroutine. tok tokenizes text
// prompts and /tokenize requests; nil selects a byte-level fallback (one token per byte).
// Errors name the invalid Config fields or the profile file.
func New(cfg Config, tok Tokenizer) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("engine config: %w", err)
	}
	prof, err := LoadProfile(cfg.Profile)
	if err != nil {
		return nil, err
	}
	if tok == nil {
		tok = byteTokenizer{}
	}
	var stepFile *os.File
	switch {
	case cfg.StepLog != nil || cfg.StepLogFile == "":
	case cfg.StepLogFile == "-":
		cfg.StepLog = os.Stderr
	default:
		if stepFile, err = os.OpenFile(cfg.StepLogFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644); err != nil {
			return nil, fmt.Errorf("engine config: [step-log]: %w", err)
		}
		cfg.StepLog = stepFile
	}
	e := &Engine{
		cfg: cfg, wire: wireFor(cfg), profile: prof, tok: tok, vocab: buildVocab(tok),
		metrics: newMetrics(),
		created: time.Now().Unix(), startedAt: time.Now(),
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	e.stepFile = stepFile
	e.metrics.kvBlocks, e.metrics.blockSize, e.metrics.maxSeqs = cfg.KVCacheTokens/cfg.BlockSize, cfg.BlockSize, cfg.MaxNumSeqs
	e.metrics.prefixCaching, e.metrics.constantITL = !cfg.DisablePrefixCaching, cfg.Quirks.ConstantITL
	e.sched = newScheduler(e)
	go func() {
		defer close(e.done)
		e.sched.run(e.stop)
	}()
	return e, nil
}

// Config returns the engine's configuration.
func (e *Engine) Config() Config { return e.cfg }

// Started returns when New ran: the origin of the times in Config.SeqLog.
func (e *Engine) Started() time.Time { return e.startedAt }

// Profile returns the engine's cost-model profile.
func (e *Engine) Profile() Profile { return e.profile }

// Handler returns the HTTP handler serving every endpoint.
func (e *Engine) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/completions", e.handleCompletions)
	mux.HandleFunc("GET /v1/models", e.handleModels)
	mux.HandleFunc("GET /health", e.handleHealth)
	mux.HandleFunc("POST /tokenize", e.handleTokenize)
	mux.HandleFunc("POST /detokenize", e.handleDetokenize)
	mux.HandleFunc("POST /v1/tokenize", e.handleTokenize)
	mux.HandleFunc("POST /v1/detokenize", e.handleDetokenize)
	mux.HandleFunc("GET /metrics", e.handleMetrics)
	mux.HandleFunc("POST /reset_prefix_cache", e.handleResetPrefixCache)
	mux.HandleFunc("GET /api/version", e.handleVersion)    // ollama only (dialect.native)
	mux.HandleFunc("POST /api/generate", e.handleGenerate) // ollama only
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		e.writeError(w, http.StatusNotFound, "NotFoundError", "Not Found", "")
	})
	return e.withLoading(mux)
}

// Start listens on addr (e.g. "127.0.0.1:0") and serves Handler in a goroutine. It returns the
// base URL, e.g. "http://127.0.0.1:41234". Only one server per Engine.
func (e *Engine) Start(addr string) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("engine listen %s: %w", addr, err)
	}
	srv := &http.Server{Handler: e.Handler(), ReadHeaderTimeout: 30 * time.Second}
	e.mu.Lock()
	if e.srv != nil {
		e.mu.Unlock()
		ln.Close()
		return "", errors.New("engine: already started")
	}
	e.srv = srv
	e.mu.Unlock()
	go srv.Serve(ln)
	return "http://" + ln.Addr().String(), nil
}

// Close stops the scheduler and the HTTP server (if started); in-flight requests end without
// further tokens. It returns the server's close error, if any; later calls return nil.
func (e *Engine) Close() error {
	var err error
	e.stopOnce.Do(func() {
		close(e.stop) // handlers waiting for tokens return at once
		<-e.done
		e.mu.Lock()
		srv := e.srv
		e.mu.Unlock()
		if srv != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			if serr := srv.Shutdown(ctx); serr != nil {
				err = srv.Close()
			}
			cancel()
		}
		if e.stepFile != nil {
			err = errors.Join(err, e.stepFile.Close())
		}
	})
	return err
}

// WriteMetrics writes what GET /metrics serves without quirks (the dialect's metrics and the
// genload_engine_* truth), also when Quirks.NoMetrics hides the endpoint from clients.
func (e *Engine) WriteMetrics(w io.Writer) {
	e.metrics.write(w, &e.wire, e.cfg.ModelName, e.cfg.TimeScale, false, false)
}

// ResetPrefixCache drops every unreferenced prefix-cache block (as POST /reset_prefix_cache).
func (e *Engine) ResetPrefixCache() {
	done := make(chan struct{})
	select {
	case e.sched.resetReq <- done:
		<-done
	case <-e.stop:
	}
}
