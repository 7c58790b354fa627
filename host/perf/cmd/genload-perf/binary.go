package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/genload/genload/host/perf"
	"github.com/genload/genload/host/results"
)

// binaryCell is a one-cell run of the genload binary against the step server.
type binaryCell struct {
	mode string
	n    int
}

// The per-token cells of the binary rows, and the largest cells (once).
var (
	binaryCells  = []binaryCell{{"routed", 256}, {"routed", 1024}, {"array", 1024}}
	binaryTokens = 200
	// binaryBaseTokens is the tokens per stream of a per-token cell's base run.
	binaryBaseTokens = 2
	binaryL          = 128 // uniform prompt length of the per-token cells: prompt work stays small
)

type largestCell struct {
	name      string
	mode      string
	b, l      int
	lengthsFn string
}

var largestCells = []largestCell{
	{"array B=256 L=128000", "array", 256, 128000, "uniform"}, // 32.8 M ids; gamma's longest would pass the context
	{"routed B=4096 L=1000", "routed", 4096, 1000, "gamma"},
}

// binaryGroup runs the rows of the genload binary itself (`genload run`, one cell, against the
// step server at 10 ms steps): its fixed cost (one sequence, two tokens: tokenizer, corpus,
// plugins, probes, warmup), its marginal CPU per token at N streams against the raw-socket Go
// client of the same cell and round (and its peak RSS against the asyncio client's), and,
// in the first round, the largest cells' time to build and send their bodies against a
// modeled TTFT and its RSS against their size. A failed run is one of the failures returned
// and leaves its rows without that round; an error stops the group.
func binaryGroup(ctx context.Context, r *perf.Runner, o options, w io.Writer) ([]string, error) {
	if os.Getenv("GENLOAD_PLUGIN_DIR") == "" {
		return nil, fmt.Errorf("binary rows: GENLOAD_PLUGIN_DIR is not set (run through make perf, which builds the plugins)")
	}
	gl, err := buildTool(ctx, r, "genload", "./host/cmd/genload")
	if err != nil {
		return nil, err
	}
	raw, err := buildTool(ctx, r, "paced-raw", "./host/perf/cmd/paced-raw")
	if err != nil {
		return nil, err
	}
	python, note := asyncioPython(o.python)
	env, cpu, pid, stop, err := startServer(ctx, "paced-serve", "-steps", "10ms")
	if err != nil {
		return nil, err
	}
	defer stop()
	r.ClientCPU, r.ServerPID = cpu, pid
	_, addr, _ := strings.Cut(env[0], "=")
	glEnv, err := parseEnv(o.genloadEnv)
	if err != nil {
		return nil, err
	}
	b := &binaryRun{ctx: ctx, r: r, gl: gl, raw: raw, python: python, target: "http://" + addr,
		dir: filepath.Join(r.BinDir, "..", "binary"), s: perf.NewSamples(o.rounds), env: glEnv}
	fixedCfg, err := b.prepare()
	if err != nil {
		return nil, err
	}
	for rnd := range o.rounds {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		ok, err := b.fixedCost(fixedCfg, rnd)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		for _, c := range binaryCells {
			if err := b.perToken(c, rnd); err != nil {
				return nil, err
			}
		}
		if rnd > 0 {
			continue
		}
		for _, c := range largestCells {
			if err := b.largest(c); err != nil {
				return nil, err
			}
		}
	}
	fmt.Fprintf(w, "\n### The genload binary (row 9)\n\n")
	fmt.Fprintf(w, "`genload run`, one cell, against the step server at 10 ms steps (server on CPU 0, each process on CPU %s); per-token cells: uniform prompts of %d tokens, %d tokens per stream; baselines: the raw-socket Go client and the asyncio client on the same cell in the same round", cpu, binaryL, binaryTokens)
	if len(glEnv) > 0 {
		fmt.Fprintf(w, "; genload run with %s", strings.Join(glEnv, " "))
	}
	if note != "" {
		fmt.Fprintf(w, " (%s)", note)
	}
	fmt.Fprintf(w, "\n\n")
	perf.WriteTable(w, perf.BinaryRows(b.s, binaryCellNames(), largestNames()))
	return b.failures, nil
}

// binaryRun is one binaryGroup in progress: the built genload and raw-client binaries, the
// asyncio client's interpreter, the step server's URL, the directory of the cells' configs
// and results, and what the runs measured so far (samples, failures).
type binaryRun struct {
	ctx         context.Context
	r           *perf.Runner
	gl, raw     string // paths of the genload and paced-raw binaries
	python      string // the asyncio client's interpreter
	target, dir string
	s           *perf.Samples
	failures    []string
	env         []string // added to every genload run's environment (-genload-env)
}

// prepare empties the previous run's results (run ids repeat), creates the directory and
// writes the fixed-cost cell's config (array, B = 1, L = 1000, 2 tokens, gamma lengths),
// returning its path.
func (b *binaryRun) prepare() (string, error) {
	if err := os.RemoveAll(filepath.Join(b.dir, "results")); err != nil {
		return "", err
	}
	if err := os.MkdirAll(b.dir, 0o755); err != nil {
		return "", err
	}
	return b.writeCfg("fixed", "array", 1, 1000, 2, "gamma", 0)
}

// fail records a failed run: its error joins the failures returned and goes to stderr.
func (b *binaryRun) fail(e error) {
	b.failures = append(b.failures, e.Error())
	fmt.Fprintln(os.Stderr, e)
}

// writeCfg writes a one-cell config (B = b prompts of L = l tokens, tokens per stream, the
// lengths plugin) and returns its path; rows > 256 uses a corpus of that many rows (the
// embedded one has 256, and a cell's prompts must be distinct).
func (b *binaryRun) writeCfg(name, mode string, bs, l, tokens int, lengths string, rows int) (string, error) {
	p := filepath.Join(b.dir, name+".toml")
	cfg := fmt.Sprintf("target = %q\nmode = %q\nmax_tokens = %d\nout = %q\n[matrix]\nseq_lens = [%d]\nbatch_sizes = [%d]\n[lengths]\nplugin = %q\n",
		b.target, mode, tokens, filepath.Join(b.dir, "results"), l, bs, lengths)
	if rows > 256 {
		corpus, err := bigCorpus(b.r.Root, b.dir, rows)
		if err != nil {
			return "", err
		}
		cfg += fmt.Sprintf("[prompt]\ncorpus = %q\n", corpus)
	}
	return p, os.WriteFile(p, []byte(cfg), 0o644)
}

// runGenload runs `genload run -c cfgPath --run-id runID` with env added (30 min at most).
func (b *binaryRun) runGenload(cfgPath, runID string, env ...string) (perf.Proc, error) {
	return b.r.RunProc(b.ctx, 30*time.Minute, append(slices.Clip(b.env), env...), b.gl, "run", "-c", cfgPath, "--run-id", runID)
}

// parseEnv splits -genload-env's comma-separated KEY=VALUE pairs; a pair without '=' or
// without a key is an error naming it.
func parseEnv(s string) ([]string, error) {
	var out []string
	for _, kv := range strings.Split(s, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return nil, fmt.Errorf("-genload-env: %q is not KEY=VALUE", kv)
		}
		out = append(out, kv)
	}
	return out, nil
}

// fixedCost measures round rnd's fixed cost (CPU s, peak RSS MB) of the fixed cell, with the
// user caches as they are and then empty (a machine's first run: the tokenizer's tables
// built from its JSON, the plugin compiled). It returns false when the first run failed, so
// the round measures nothing else.
func (b *binaryRun) fixedCost(fixedCfg string, rnd int) (bool, error) {
	p, err := b.runGenload(fixedCfg, fmt.Sprintf("fixed-r%d", rnd))
	if err != nil {
		b.fail(fmt.Errorf("binary fixed cost: %w", err))
		return false, nil
	}
	b.s.Add("Binary/fixed|cpu-s", rnd, p.CPU.Seconds())
	b.s.Add("Binary/fixed|maxrss-MB", rnd, p.MaxRSS)
	fmt.Fprintf(os.Stderr, "round %d  binary fixed cost   %.2f CPU-s  %.1f MB\n", rnd+1, p.CPU.Seconds(), p.MaxRSS)
	cold, err := os.MkdirTemp(b.dir, "cold-cache-")
	if err != nil {
		return false, err
	}
	pc, err := b.runGenload(fixedCfg, fmt.Sprintf("fixed-cold-r%d", rnd), "XDG_CACHE_HOME="+cold)
	_ = os.RemoveAll(cold)
	if err != nil {
		b.fail(fmt.Errorf("binary fixed cost, empty caches: %w", err))
	} else {
		b.s.Add("Binary/fixed-cold|cpu-s", rnd, pc.CPU.Seconds())
		b.s.Add("Binary/fixed-cold|maxrss-MB", rnd, pc.MaxRSS)
		fmt.Fprintf(os.Stderr, "round %d  binary fixed cost, empty caches   %.2f CPU-s  %.1f MB\n", rnd+1, pc.CPU.Seconds(), pc.MaxRSS)
	}
	return true, nil
}

// perToken measures per-token cell c in round rnd: genload's marginal CPU per token (ns),
// the cell's CPU less its base's over the N × (binaryTokens − binaryBaseTokens) tokens that
// only the cell streams, and its peak RSS (MB); then the raw and asyncio clients on the same
// cell (perClient).
func (b *binaryRun) perToken(c binaryCell, rnd int) error {
	name := fmt.Sprintf("%s-N%d", c.mode, c.n)
	rows := 0
	if c.n > 256 {
		rows = c.n
	}
	cfgPath, err := b.writeCfg(name, c.mode, c.n, binaryL, binaryTokens, "uniform", rows)
	if err != nil {
		return err
	}
	// The base is the same cell with 2 tokens a stream: its prompts, bodies,
	// connections and results are the same, so the difference is the streaming of the
	// other tokens (a run plans a corpus row when a cell first uses it).
	baseCfg, err := b.writeCfg(name+"-base", c.mode, c.n, binaryL, binaryBaseTokens, "uniform", rows)
	if err != nil {
		return err
	}
	pb, err := b.runGenload(baseCfg, fmt.Sprintf("%s-base-r%d", name, rnd))
	if err != nil {
		b.fail(fmt.Errorf("binary %s with %d tokens: %w", name, binaryBaseTokens, err))
		return nil
	}
	key := fmt.Sprintf("Binary/%s/N=%d", c.mode, c.n)
	pg, err := b.runGenload(cfgPath, fmt.Sprintf("%s-r%d", name, rnd))
	if err != nil {
		b.fail(fmt.Errorf("binary %s: %w", name, err))
		return nil
	}
	base := pb.CPU
	tokens := float64(c.n * (binaryTokens - binaryBaseTokens))
	b.s.Add(key+"|marginal-ns/token", rnd, float64((pg.CPU-base).Nanoseconds())/tokens)
	b.s.Add(key+"|maxrss-MB", rnd, pg.MaxRSS)
	b.perClient(c, name, key, rnd)
	fmt.Fprintf(os.Stderr, "round %d  binary %-12s %.2f µs/token marginal  %.1f MB\n", rnd+1, name, float64((pg.CPU-base).Nanoseconds())/tokens/1e3, pg.MaxRSS)
	return nil
}

// perClient runs the raw-socket Go client and the asyncio client on per-token cell c and
// records, under key, each one's streaming CPU per token (ns) and peak RSS (MB).
func (b *binaryRun) perClient(c binaryCell, name, key string, rnd int) {
	cell := perf.PacedCell{Mode: c.mode, Step: 10 * time.Millisecond, N: c.n}
	clients := perf.PacedClients("", b.raw, b.python, b.r.Root)[1:] // the raw and asyncio clients
	for _, cl := range clients {
		argv := append(cl.Argv(b.target, cell, binaryTokens), promptLenFlag(cl.Name), fmt.Sprint(binaryL))
		pc, err := b.r.RunProc(b.ctx, 10*time.Minute, nil, argv...)
		if err != nil {
			b.fail(fmt.Errorf("binary %s, %s client: %w", name, cl.Name, err))
			continue
		}
		var rep perf.ClientReport
		if err := json.Unmarshal(bytes.TrimSpace(pc.Stdout), &rep); err != nil || rep.Tokens == 0 {
			b.fail(fmt.Errorf("binary %s, %s client: report %q: %v", name, cl.Name, pc.Stdout, err))
			continue
		}
		b.s.Add(key+"/"+cl.Name+"|cpu-ns/token", rnd, float64(rep.StreamCPUNS)/float64(rep.Tokens))
		b.s.Add(key+"/"+cl.Name+"|maxrss-MB", rnd, pc.MaxRSS)
	}
}

// largest runs largest cell c once (2 tokens a stream) and records from its results the
// time to build and to send its bodies (ms), their size (MB), the run's peak RSS (MB) and
// CPU (s), and the cell's modeled TTFT (s, modeledTTFT).
func (b *binaryRun) largest(c largestCell) error {
	name := strings.NewReplacer(" ", "-", "=", "").Replace(c.name)
	cfgPath, err := b.writeCfg(name, c.mode, c.b, c.l, 2, c.lengthsFn, c.b)
	if err != nil {
		return err
	}
	runID := "largest-" + name
	pg, err := b.runGenload(cfgPath, runID)
	if err != nil {
		b.fail(fmt.Errorf("largest cell %s: %w", c.name, err))
		return nil
	}
	run, err := results.ReadFile(filepath.Join(b.dir, "results", runID+".json"))
	if err != nil || len(run.Cells) != 1 || run.Cells[0].Client == nil {
		b.fail(fmt.Errorf("largest cell %s: results: %v", c.name, err))
		return nil
	}
	cl := run.Cells[0].Client
	ttft, err := modeledTTFT(b.r.Root, run.Cells[0].Lengths.Each)
	if err != nil {
		return err
	}
	key := "Largest/" + c.name
	b.s.Add(key+"|build-ms", 0, float64(cl.Build)/1e6)
	b.s.Add(key+"|sent-ms", 0, float64(cl.Sent)/1e6)
	b.s.Add(key+"|body-MB", 0, float64(cl.BodyBytes)/(1<<20))
	b.s.Add(key+"|maxrss-MB", 0, pg.MaxRSS)
	b.s.Add(key+"|ttft-model-s", 0, ttft.Seconds())
	b.s.Add(key+"|cpu-s", 0, pg.CPU.Seconds())
	fmt.Fprintf(os.Stderr, "largest %s: build %.0f ms, sent %.0f ms, bodies %.1f MB, RSS %.1f MB, modeled TTFT p50 %.1f s\n",
		c.name, float64(cl.Build)/1e6, float64(cl.Sent)/1e6, float64(cl.BodyBytes)/(1<<20), pg.MaxRSS, ttft.Seconds())
	return nil
}

func promptLenFlag(client string) string {
	if client == "asyncio" {
		return "--prompt-len"
	}
	return "-prompt-len"
}

func binaryCellNames() []perf.BinaryCell {
	var out []perf.BinaryCell
	for _, c := range binaryCells {
		out = append(out, perf.BinaryCell{Mode: c.mode, N: c.n})
	}
	return out
}

func largestNames() []string {
	var out []string
	for _, c := range largestCells {
		out = append(out, c.name)
	}
	return out
}

// modeledTTFT is the median time to first token of a cell whose prompts (lengths, in order)
// are prefilled one after another on the dense-8b profile (host/engine/profiles/dense-8b.toml:
// one H100): prompt i's first token comes after Σ_{k ≤ i} (L_k · prefill_ns_per_token +
// L_k²/2 · prefill_attn_ns_per_pair), the per-step fixed cost left out.
func modeledTTFT(root string, lengths []int) (time.Duration, error) {
	var p struct {
		PrefillNsPerToken    float64 `toml:"prefill_ns_per_token"`
		PrefillAttnNsPerPair float64 `toml:"prefill_attn_ns_per_pair"`
	}
	path := filepath.Join(root, "host", "engine", "profiles", "dense-8b.toml")
	if _, err := toml.DecodeFile(path, &p); err != nil {
		return 0, fmt.Errorf("modeled TTFT: %s: %w", path, err)
	}
	if len(lengths) == 0 || p.PrefillNsPerToken <= 0 {
		return 0, fmt.Errorf("modeled TTFT: no lengths or no prefill cost in %s", path)
	}
	var t float64
	firsts := make([]float64, len(lengths))
	for i, l := range lengths {
		t += float64(l)*p.PrefillNsPerToken + float64(l)*float64(l)/2*p.PrefillAttnNsPerPair
		firsts[i] = t
	}
	sort.Float64s(firsts)
	return time.Duration(firsts[(len(firsts)-1)/2]), nil
}

// bigCorpus writes a corpus of rows rows to dir (JSONL, one "text" per line) from the embedded
// corpus's 256 texts (corpus/prompts.jsonl), each copy numbered so that every row is distinct,
// for cells of more than 256 prompts; it returns its path.
func bigCorpus(root, dir string, rows int) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, "corpus", "prompts.jsonl"))
	if err != nil {
		return "", fmt.Errorf("corpus for the binary rows: %w", err)
	}
	var texts []string
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var row struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal(line, &row); err != nil || row.Text == "" {
			return "", fmt.Errorf("corpus/prompts.jsonl: a line without text: %v", err)
		}
		texts = append(texts, row.Text)
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	for k := range rows {
		if err := enc.Encode(map[string]string{"text": fmt.Sprintf("Copy %d of text %d. %s", k/len(texts)+1, k%len(texts)+1, texts[k%len(texts)])}); err != nil {
			return "", err
		}
	}
	p := filepath.Join(dir, fmt.Sprintf("corpus-%d.jsonl", rows))
	return p, os.WriteFile(p, out.Bytes(), 0o644)
}
