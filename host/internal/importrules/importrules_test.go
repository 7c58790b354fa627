package importrules

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/genload/genload/host/internal/testplugins"
)

const mod = "github.com/genload/genload/"

// pkg is the part of `go list -json` the rules read.
type pkg struct {
	ImportPath   string
	Standard     bool
	Imports      []string
	TestImports  []string
	XTestImports []string
}

// graph lists every package of the module and its dependencies (without tests: a package's
// Imports are those of its non-test files; its test files' imports are listed apart).
func graph(t *testing.T) map[string]pkg {
	t.Helper()
	root, err := testplugins.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	// `go test` puts its own GOROOT/bin first on the PATH of the test binary.
	cmd := exec.Command("go", "list", "-e", "-deps", "-json=ImportPath,Standard,Imports,TestImports,XTestImports", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps -json ./... in %s: %v\n%s", root, err, stderr.String())
	}
	g := map[string]pkg{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		g[p.ImportPath] = p
	}
	if _, ok := g[mod+"host/dispatch"]; !ok || len(g) < 50 {
		t.Fatalf("go list gave %d packages without %shost/dispatch: the rules below would check nothing", len(g), mod)
	}
	return g
}

// own returns the module's own packages, sorted.
func own(g map[string]pkg) []string {
	var ps []string
	for p := range g {
		if strings.HasPrefix(p, mod) {
			ps = append(ps, p)
		}
	}
	slices.Sort(ps)
	return ps
}

// under reports whether p is the package prefix or one below it.
func under(p, prefix string) bool { return p == prefix || strings.HasPrefix(p, prefix+"/") }

// path returns the shortest import chain from "from" to a package matching target through
// non-test imports ("a → b → c"), or "" if there is none.
func path(g map[string]pkg, from string, target func(string) bool) string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p != from && target(p) {
			chain := []string{p}
			for q := prev[p]; q != ""; q = prev[q] {
				chain = append(chain, q)
			}
			slices.Reverse(chain)
			return strings.Join(chain, " → ")
		}
		for _, q := range g[p].Imports {
			if _, seen := prev[q]; !seen {
				prev[q] = p
				queue = append(queue, q)
			}
		}
	}
	return ""
}

// short drops the module prefix for messages and exception keys.
func short(p string) string { return strings.TrimPrefix(p, mod) }

// importers returns, for each own package that imports a package matching target directly, the
// first such import; test says whether test files count.
func importers(g map[string]pkg, target func(string) bool, test bool) map[string]string {
	got := map[string]string{}
	for _, p := range own(g) {
		imps := g[p].Imports
		if test {
			imps = slices.Concat(imps, g[p].TestImports, g[p].XTestImports)
		}
		for _, q := range imps {
			if target(q) {
				got[short(p)] = short(q)
				break
			}
		}
	}
	return got
}

// checkAllowed fails for every importer not in allowed (package → why it may).
func checkAllowed(t *testing.T, rule string, got map[string]string, allowed map[string]string) {
	t.Helper()
	for p, q := range got {
		if _, ok := allowed[p]; !ok {
			t.Errorf("%s: %s imports %s", rule, p, q)
		}
	}
	for p := range allowed {
		if _, ok := got[p]; !ok {
			t.Errorf("%s: %s is listed as allowed but imports none: remove it from the list", rule, p)
		}
	}
}

func TestOnlyDispatchImportsFasthttp(t *testing.T) {
	// The client's HTTP stack is one package, so that its connection handling, timeouts and
	// stamping are in one place and every other package can be tested without it. No other
	// package, not even in tests, imports fasthttp today: the perf baselines compare against
	// net/http and raw sockets, which need no exception. An exception is added here with its why.
	g := graph(t)
	fasthttp := func(p string) bool { return under(p, "github.com/valyala/fasthttp") }
	checkAllowed(t, "only host/dispatch imports fasthttp", importers(g, fasthttp, true), map[string]string{
		"host/dispatch": "the client's HTTP stack",
	})
}

func TestOnlyPluginImportsWazero(t *testing.T) {
	// The WebAssembly runtime is behind host/plugin's Lengths and Router values; nothing else
	// compiles or calls guest code.
	g := graph(t)
	wazero := func(p string) bool { return under(p, "github.com/tetratelabs/wazero") }
	checkAllowed(t, "only host/plugin imports wazero", importers(g, wazero, true), map[string]string{
		"host/plugin": "the plugin host",
	})
}

// engineMayImport lists the module's packages the built-in engine may depend on: it is a
// server, so it shares leaf helpers with the client but none of the client's packages.
var engineMayImport = map[string]string{
	"host/internal/jsonenc":  "the JSON string encoder both sides share (a leaf)",
	"host/internal/jsonscan": "the in-place JSON reader both sides share (a leaf)",
	"host/internal/clock":    "the precise wait until an instant both sides share (a leaf)",
	"host/exitcode":          "process exit codes (a leaf)",
}

func TestEngineImportsNoClientPackage(t *testing.T) {
	// The engine stands in for a real server: if it imported dispatch, sse, measure or run it
	// could agree with the client by construction instead of by the wire format.
	g := graph(t)
	engine := mod + "host/engine"
	for _, p := range own(g) {
		if under(p, engine) || !strings.HasPrefix(p, mod+"host/") {
			continue
		}
		if _, ok := engineMayImport[short(p)]; ok {
			continue
		}
		if c := path(g, engine, func(q string) bool { return q == p }); c != "" {
			t.Errorf("host/engine depends on the client package %s: %s", short(p), short(c))
		}
	}
	for q := range engineMayImport {
		if _, ok := g[mod+q]; !ok {
			t.Errorf("engineMayImport lists %s, which does not exist: remove it", q)
		}
	}
}

func TestOnlyRunAndTheCLIImportTheEngine(t *testing.T) {
	// A client package that imported the engine could reach into the server's state instead of
	// measuring it over the wire. Tests may start it (they do, to have a server).
	g := graph(t)
	isEngine := func(p string) bool { return under(p, mod+"host/engine") }
	got := importers(g, isEngine, false)
	delete(got, "host/engine")
	checkAllowed(t, "only host/run and host/cmd/genload import host/engine", got, map[string]string{
		"host/run":         "starts the built-in engine for target = \"builtin\"",
		"host/cmd/genload": "the serve command runs the engine as a server",
	})
}

// transport lists what "a transport" is for the rule below: the HTTP stacks and the packages
// that speak to a server.
func transport(p string) bool {
	return p == "net/http" || under(p, "github.com/valyala/fasthttp") ||
		p == mod+"host/dispatch" || p == mod+"host/scrape"
}

// firstReached returns the packages matching target that from reaches through non-test imports
// without passing another match, each with its chain, sorted by package.
func firstReached(g map[string]pkg, from string, target func(string) bool) (pkgs, chains []string) {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, q := range g[p].Imports {
			if _, seen := prev[q]; seen {
				continue
			}
			prev[q] = p
			if !target(q) {
				queue = append(queue, q)
				continue
			}
			chain := []string{q}
			for r := p; r != ""; r = prev[r] {
				chain = append(chain, r)
			}
			slices.Reverse(chain)
			pkgs = append(pkgs, short(q))
			chains = append(chains, shortChain(strings.Join(chain, " → ")))
		}
	}
	return pkgs, chains
}

func TestMeasureAndReportImportNoTransport(t *testing.T) {
	// Figures and results are computed from recorded values; linking an HTTP client into them
	// means results, report, consistency, diff and plot can only be built with one. host/recording and
	// host/scrape/metrics, the values themselves, are held to the same rule. There is no
	// exception: a package here that needs a transport's value type gets it moved out of the
	// transport (as metrics was out of scrape).
	g := graph(t)
	for _, p := range []string{"host/recording", "host/scrape/metrics", "host/measure", "host/results", "host/report", "host/compare",
		"host/plan", "host/lengths", "host/latmodel", "host/htmlreport", "host/steplog", "host/steplog/cellcheck", "host/gputime",
		"host/merge", "host/shard", "host/repeat", "host/stats", "host/chart"} {
		if _, ok := g[mod+p]; !ok {
			t.Errorf("%s does not exist: the rule checks nothing for it", p)
			continue
		}
		if got, chains := firstReached(g, mod+p, transport); len(got) > 0 {
			t.Errorf("%s reaches the transports %v (chains: %s): move the value it needs out of the transport",
				p, got, strings.Join(chains, "; "))
		}
	}
}

// resultsLayers are the packages of a run's results, lowest first: each may import those
// before it and none after it.
var resultsLayers = []string{
	"host/results", // the records and their JSONL and JSON files
	"host/report",  // what prints a run: tables, columns, CSV, legend, warnings
	"host/compare", // what compares runs: comparability, consistency, diff, pooled repeats, plot
}

func TestResultsReportCompareAreOneWay(t *testing.T) {
	// The records do not know how they are printed, and printing a run does not compare runs:
	// a record type that needed the table, or a table that needed the statistics across runs,
	// would tie the lower package to all of the higher one. The compiler forbids a cycle; this
	// holds the direction (a move that turned report → compare around fails here), tests too.
	g := graph(t)
	for i, p := range resultsLayers {
		if _, ok := g[mod+p]; !ok {
			t.Errorf("%s does not exist: the rule checks nothing for it", p)
			continue
		}
		for _, q := range resultsLayers[i+1:] {
			if c := path(g, mod+p, func(r string) bool { return r == mod+q }); c != "" {
				t.Errorf("%s depends on %s, which is above it: %s", p, q, shortChain(c))
			}
			imps := slices.Concat(g[mod+p].TestImports, g[mod+p].XTestImports)
			if slices.Contains(imps, mod+q) {
				t.Errorf("the tests of %s import %s, which is above it", p, q)
			}
		}
	}
}

func TestPlanStagesImportNoPluginRuntime(t *testing.T) {
	// A cell's plan is built from values: the lengths and the router come in through the
	// Lengths and Router interfaces, which the wasm plugins satisfy and tests fake. Reaching
	// host/plugin or wazero from the plan stages would tie every test of a plan to a runtime.
	g := graph(t)
	runtime := func(p string) bool { return p == mod+"host/plugin" || under(p, "github.com/tetratelabs/wazero") }
	for _, p := range []string{"host/plan", "host/lengths"} {
		if _, ok := g[mod+p]; !ok {
			t.Errorf("%s does not exist: the rule checks nothing for it", p)
			continue
		}
		if got, chains := firstReached(g, mod+p, runtime); len(got) > 0 {
			t.Errorf("%s reaches the plugin runtime %v (chains: %s): take the plugin through an interface", p, got, strings.Join(chains, "; "))
		}
	}
}

// shortChain drops the module prefix from every element of an import chain.
func shortChain(c string) string { return strings.ReplaceAll(c, mod, "") }

func TestPathFindsTheShortestChain(t *testing.T) {
	// The rules above are only as good as path and importers: check them on a small graph.
	g := map[string]pkg{
		"a": {ImportPath: "a", Imports: []string{"b", "c"}},
		"b": {ImportPath: "b", Imports: []string{"d"}},
		"c": {ImportPath: "c", Imports: []string{"x"}},
		"d": {ImportPath: "d", Imports: []string{"x"}},
		"x": {ImportPath: "x"},
	}
	if got := path(g, "a", func(p string) bool { return p == "x" }); got != "a → c → x" {
		t.Errorf("path = %q, want a → c → x", got)
	}
	if got := path(g, "b", func(p string) bool { return p == "c" }); got != "" {
		t.Errorf("path b to c = %q, want none", got)
	}
	// d is reached first through b; x only through c or d, so it is reached first only via c.
	got, chains := firstReached(g, "a", func(p string) bool { return p == "d" || p == "c" })
	if fmt.Sprint(got, chains) != "[c d] [a → c a → b → d]" {
		t.Errorf("firstReached = %v %v", got, chains)
	}
	h := map[string]pkg{
		mod + "p": {ImportPath: mod + "p", Imports: []string{"fmt"}, XTestImports: []string{"x/y"}},
		mod + "q": {ImportPath: mod + "q", Imports: []string{"x/y/z"}},
	}
	xy := func(p string) bool { return under(p, "x/y") }
	if got := fmt.Sprint(importers(h, xy, false)); got != "map[q:x/y/z]" {
		t.Errorf("importers without tests = %s", got)
	}
	if got := fmt.Sprint(importers(h, xy, true)); got != "map[p:x/y q:x/y/z]" {
		t.Errorf("importers with tests = %s", got)
	}
}
