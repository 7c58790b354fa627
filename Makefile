# genload — the two commands that matter:
#   make bench   build host + plugins, run bench.toml against the built-in engine
#   make test    every test (CI runs this through .ci/run)
#   make sweep   a four-point sweep over built-in engines (sweep.toml)
GO      ?= go
BUILD   := build
PLUGINS := gamma uniform router-rr
WASM    := $(PLUGINS:%=$(BUILD)/plugins/%.wasm)
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
CONFIG  ?= bench.toml

# The built plugins are copied here, with their SHA-256 digests in SHA256SUMS, and embedded
# into genload by go:embed (host/plugin/bundled): the binary needs no plugin file. Everything
# in it but README.md is ignored by git.
BUNDLE  := host/plugin/bundled/wasm

# Tests find plugins here by name (searched before the ones built into genload).
export GENLOAD_PLUGIN_DIR := $(CURDIR)/$(BUILD)/plugins

.PHONY: all build plugins bench bench-busy sweep test conformance test-plain test-k8s lint race race-pkgs race-alone perf clean FORCE
all: build

# genload after the plugins: it embeds them.
build: $(BUILD)/genload

# A first build (empty Go caches) downloads the modules and compiles a few hundred packages for
# minutes on 2 cores (README); -v names each package as it is compiled, so the build is seen to
# advance. Later builds are cached and print only what changed.
FIRST = @[ -e $@ ] || echo "make: first build of $@: downloading modules, then compiling (each package is named as it compiles; minutes on a cold cache)"

# CGO_ENABLED=0: a static binary, needing no libc, so that it runs copied alone into a scratch
# or busybox image (linked against glibc it would not start there).
$(BUILD)/genload: plugins FORCE
	$(FIRST)
	CGO_ENABLED=0 $(GO) build -v -trimpath -ldflags "-X main.version=$(VERSION)" -o $@ ./host/cmd/genload

# The plugins, then their copies to embed (a go build or go install run afterwards, here or by
# the Dockerfile, embeds them too).
plugins: $(WASM)
	cp $(WASM) $(BUNDLE)/
	cd $(BUNDLE) && sha256sum $(PLUGINS:%=%.wasm) > SHA256SUMS

# Plugins are Go built for wasip1 as reactors (c-shared) exporting functions with //go:wasmexport.
$(BUILD)/plugins/%.wasm: FORCE
	@mkdir -p $(@D)
	$(FIRST)
	GOOS=wasip1 GOARCH=wasm $(GO) build -v -buildmode=c-shared -trimpath -ldflags="-s -w" -o $@ ./plugins/$*

# make bench runs the built-in engine at time scale 0.1, not its default 0.05: beside one busy
# process on 2 cores, 0.1 kept fwd monotonic in B and its worst step overrun at 4 %, 0.05 did
# not (PERF.md, "The built-in engine on a busy host"). BENCH_TIME_SCALE=0 takes bench.toml's.
# BENCH_SPIN_WAIT (e.g. 300us): the engine's scheduler spins, instead of sleeping, for that long
# before each step's planned end (at most a quarter of the step); off by default: beside one busy
# process it did not lower the cells over the overrun share (PERF.md, the same section); 0 takes
# bench.toml's [engine] spin_wait.
BENCH_TIME_SCALE ?= 0.1
BENCH_SPIN_WAIT  ?= 0
BENCH_ENGINE     = $(if $(filter-out 0,$(BENCH_TIME_SCALE)),--time-scale $(BENCH_TIME_SCALE)) $(if $(filter-out 0,$(BENCH_SPIN_WAIT)),--spin-wait $(BENCH_SPIN_WAIT))
bench: build
	./$(BUILD)/genload run -c $(CONFIG) $(BENCH_ENGINE)

# sweep.toml: four built-in engines (two cost-model profiles × speculative decoding off and
# on) at time scale 0.05, each started, measured and stopped in turn; a summary per point.
SWEEP     ?= sweep.toml
SWEEP_OUT ?= results/sweep-$(shell date -u +%Y%m%d-%H%M%S)
sweep: build
	./$(BUILD)/genload sweep $(SWEEP) --out $(SWEEP_OUT)

# Every test run goes through testsum: it prints what plain go test prints (a line per package,
# the output of failures) and records each test's outcome, so that make test can end with the
# skipped tests, grouped by their reason, and one line of counts. bash with pipefail, so that a
# go test that fails before testing anything fails the recipe too. Each go test run records
# into a file of its own under $(RECORDS) (runs that go at once do not write one file), and
# make test joins them into $(OUTCOMES) for the summary. -vet=off: go test's own vet pass is
# a subset of the analyzers of `go vet ./...`, which lint runs over the same packages.
SHELL       := bash
.SHELLFLAGS := -o pipefail -c
GOTEST      := $(GO) test -json -count=1 -vet=off
TESTSUM     := $(BUILD)/tools/testsum
OUTCOMES    := $(BUILD)/test-outcomes.jsonl
RECORDS     := $(BUILD)/test-records
$(TESTSUM): FORCE
	$(GO) build -o $@ ./host/internal/testsum

# The conformance suite holds genload's figures to within 1 % of the built-in engine's truth
# in real time (steps of 7–9 ms): in make test it runs after the plain tests, so that no other
# test binary at its own priority shares its two cores but its own shards (below).
CONFORMANCE := ./host/internal/conformance
# go test runs the packages in the order given, -p (the cores) at a time: the packages whose
# tests take longest go first, so that a phase does not end with one of them running alone
# on one core (cmd/genload waits on engines in real time; tokenizer, latmodel and prompt
# compute; htmlreport drives Chromium). The rest follow in `go list` order.
MODULE      := github.com/genload/genload
SLOW_PKGS   := ./host/cmd/genload ./host/tokenizer ./host/latmodel ./host/run ./host/htmlreport ./host/prompt ./host/plugin ./host/sweep ./host/internal/clientcheck
TEST_PKGS   = $$({ printf '$(MODULE)/%s\n' $(SLOW_PKGS:./%=%); $(GO) list ./...; } | awk '!seen[$$0]++' | grep -v '/host/internal/conformance$$')
# make test runs its phases two at a time (make -j2 over two chains):
#   timing:  test-plain ─> conformance ─> race-pkgs ─> race-alone
#   compute: race-build ─> lint ─> test-k8s                 (niced)
#   (conformance also waits for test-k8s, the end of the compute chain)
# - the timing chain holds every phase whose tests keep time in real time (engines, clients,
#   the conformance suite's 1 % checks), one after another at normal priority: two of them
#   side by side, or one niced beside a compile of the same niceness, lost figures (a
#   race-built client fell behind a B = 1 cell's chunks beside tools/k8s's compile);
# - the compute chain only compiles and analyses, niced (nice 10 weighs 110 against 1024):
#   it takes the cores the timing chain leaves idle and yields them when an engine or a
#   client wakes. It begins with the race-detector build (flags of its own, so nothing it
#   compiles is compiled by the plain tests too) and runs lint after it: go vet started
#   beside the plain tests compiled the same packages at the same time (the build cache does
#   not join two processes' compiles of one package): 183 CPU-s and 93 s for vet beside the
#   plain test build from an empty cache, against 142 CPU-s and 74 s one after the other.
# - the conformance suite starts once the compute chain is done as well, so that its two
#   shards and the race tests after them have the host to themselves: beside a niced go vet
#   from an empty cache, the two shards failed a row's 1 % figure (−1.04 %, +1.09 %) in 2 of
#   3 runs, on a host that ran the plain tests in 151 s instead of 71; race-pkgs beside a
#   niced staticcheck failed an engine test of chunk timing once. On a quiet host the
#   compute chain ends before the plain tests (79 s against 87 s), so this waits for nothing.
# From a clean clone with an empty build cache on 2 cores (a quiet host, .ci/run with its
# setup already done): make test 173 s and 175 s. In the second run's log (seconds since
# .ci/run began, 1 s of setup) the plain tests end at 87 s, the conformance suite's two shards
# at 123 s, race-pkgs at 160 s, race-alone at 176 s; the compute chain ends at 79 s. On the same machine, 222 s with the suite in one process (65 s); on a slower 2-core
# machine, 277–301 s before that, against 325 s for the earlier graph (vet beside the plain
# tests, the race tests niced beside tools/k8s; measured beside another busy process).
PHASES := phase-race-alone phase-k8s
.PHONY: test-phases $(PHASES) phase-plain phase-conformance phase-race phase-lint phase-race-build race-build
# The test builds compile without DWARF (the compiler's debug information, which no test reads:
# stack traces come from the symbol table): 12 % less CPU for the race-detector build from an
# empty cache (139 → 122 CPU-s). Set in GOFLAGS, so that go vet, go test and staticcheck's own
# go list build the packages alike and share the build cache.
TEST_GOFLAGS := -gcflags=all=-dwarf=false -ldflags=-w
test: plugins $(TESTSUM)
	@rm -rf $(RECORDS) $(OUTCOMES) && mkdir -p $(RECORDS)
	GOFLAGS="$(strip $(GOFLAGS) $(TEST_GOFLAGS))" $(MAKE) --no-print-directory -j2 test-phases
	@cat $(RECORDS)/*.jsonl > $(OUTCOMES)
	@$(TESTSUM) -summary $(OUTCOMES)

test-phases: $(PHASES)
phase-plain:
	$(MAKE) --no-print-directory test-plain
phase-conformance: phase-plain phase-k8s
	$(MAKE) --no-print-directory conformance
phase-race: phase-conformance phase-race-build
	$(MAKE) --no-print-directory race-pkgs
phase-race-alone: phase-race
	$(MAKE) --no-print-directory race-alone
phase-race-build:
	$(MAKE) --no-print-directory race-build
phase-lint: phase-race-build
	$(MAKE) --no-print-directory lint
phase-k8s: phase-lint
	$(MAKE) --no-print-directory test-k8s

# The suite runs as CONFORMANCE_SHARDS processes side by side, each every n-th row (-shard):
# a row waits on its engine in real time at about 0.16 of a core, so two take half the time
# (65 s → 33 s) and leave the cores mostly idle. Each process records into a file of its own;
# the recipe fails when any of them fails.
CONFORMANCE_SHARDS ?= 2
conformance: $(TESTSUM)
	@mkdir -p $(RECORDS)
	@pids=(); for i in $$(seq 0 $$(($(CONFORMANCE_SHARDS) - 1))); do \
	  echo "$(GOTEST) $(CONFORMANCE) -args -shard=$$i/$(CONFORMANCE_SHARDS)"; \
	  { $(GOTEST) $(CONFORMANCE) -args -shard=$$i/$(CONFORMANCE_SHARDS) | $(TESTSUM) -record $(RECORDS)/conformance-$$i.jsonl; } & pids+=($$!); \
	done; fail=0; for p in "$${pids[@]}"; do wait $$p || fail=1; done; exit $$fail

test-plain: $(TESTSUM)
	@mkdir -p $(RECORDS)
	$(GOTEST) $(TEST_PKGS) | $(TESTSUM) -record $(RECORDS)/plain.jsonl

# tools/k8s is a module of its own (k8s.io/api stays out of genload's go.mod): it decodes the
# Kubernetes manifests strictly into the API types and simulates the Indexed Job locally.
test-k8s: $(TESTSUM)
	@mkdir -p $(RECORDS)
	cd tools/k8s && nice -n 10 $(GO) vet ./... && nice -n 10 $(GOTEST) ./... | $(CURDIR)/$(TESTSUM) -record $(CURDIR)/$(RECORDS)/k8s.jsonl

# The packages that run goroutines of their own (clients, servers, scrapers, the CLI that drives
# them), tested again under the race detector, the longest first (as TEST_PKGS). host/sse is
# not among them: a Demux is fed by one goroutine (its pooled decoders pass through a
# sync.Pool), and the clients that read streams with it are raced in host/dispatch. Their tests
# that would only repeat under the detector what lighter ones race, or whose verdict is a
# timing the detector's slower client cannot keep, skip there (plainOnly, with their reason).
# In make test they run after the conformance suite, at normal priority, beside only the niced
# compute chain. The client-against-engine checks compare timings within 10 %, so they run
# after them, not beside the other race-instrumented test binaries.
RACE_PKGS := ./host/cmd/genload ./host/run ./host/sweep ./host/dispatch ./host/replay ./host/engine ./host/scrape
race: race-pkgs race-alone
# The race-detector test binaries built (the standard library and every dependency compiled
# with the detector) and run with no test, so that race-pkgs and race-alone then find them in
# the build cache: in make test this compiling goes niced beside the plain tests, first in the
# compute chain.
race-build:
	nice -n 10 $(GO) test -count=1 -vet=off -race -run '^$$' $(RACE_PKGS) ./host/internal/clientcheck > /dev/null
race-pkgs: $(TESTSUM)
	@mkdir -p $(RECORDS)
	$(GOTEST) -race $(RACE_PKGS) | $(TESTSUM) -record $(RECORDS)/race.jsonl
race-alone: $(TESTSUM)
	@mkdir -p $(RECORDS)
	$(GOTEST) -race ./host/internal/clientcheck | $(TESTSUM) -record $(RECORDS)/race-clientcheck.jsonl

# staticcheck at a pinned version, run from the Go module proxy (nothing added to go.mod).
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
# Niced: make test runs it beside tests that time engines in real time, and it only computes.
LINT_NICE := nice -n 10
lint:
	$(LINT_NICE) $(GO) vet ./...
	GOBIN=$(CURDIR)/$(BUILD)/tools $(LINT_NICE) $(GO) install $(STATICCHECK)
	$(LINT_NICE) $(BUILD)/tools/staticcheck ./...

# genload's own costs against baselines in the same process (see PERF.md). Not part of
# test: it reports, it asserts nothing. PERF_ONLY picks row groups: bench (the Go benchmarks,
# rows 1-7), paced (paced streams, three clients: row 8), binary (genload run itself: row 9),
# e.g. make perf PERF_ONLY=paced,binary.
PERF_ROUNDS ?= 5
PERF_ONLY   ?= bench,paced,binary
perf: plugins
	$(GO) run ./host/perf/cmd/genload-perf -rounds $(PERF_ROUNDS) -only $(PERF_ONLY) -out $(BUILD)/perf

# make bench beside BENCH_BUSY busy processes, then a check that fwd rose with B at every L
# and that the built-in engine's steps kept to their plan in every cell (PERF.md); one run per
# time scale of BENCH_SCALES (0 = the config's), e.g. make bench-busy BENCH_SCALES=0.1,0.05;
# the default is make bench's.
BENCH_BUSY   ?= 1
BENCH_SCALES ?= $(BENCH_TIME_SCALE)
bench-busy: build
	$(GO) run ./host/perf/cmd/genload-perf busy-bench -busy $(BENCH_BUSY) -time-scales $(BENCH_SCALES) $(if $(filter-out 0,$(BENCH_SPIN_WAIT)),-spin-wait $(BENCH_SPIN_WAIT)) -c $(CONFIG) -genload $(BUILD)/genload -out $(BUILD)/busy-bench

clean:
	rm -rf $(BUILD)
	rm -f $(BUNDLE)/*.wasm $(BUNDLE)/SHA256SUMS

FORCE:
