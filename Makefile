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

# Tests and the binary find plugins here by name.
export GENLOAD_PLUGIN_DIR := $(CURDIR)/$(BUILD)/plugins

.PHONY: all build plugins bench sweep test lint race perf clean FORCE
all: build

build: $(BUILD)/genload plugins

# A first build (empty Go caches) downloads the modules and compiles a few hundred packages for
# minutes on 2 cores (README); -v names each package as it is compiled, so the build is seen to
# advance. Later builds are cached and print only what changed.
FIRST = @[ -e $@ ] || echo "make: first build of $@: downloading modules, then compiling (each package is named as it compiles; minutes on a cold cache)"

$(BUILD)/genload: FORCE
	$(FIRST)
	$(GO) build -v -trimpath -ldflags "-X main.version=$(VERSION)" -o $@ ./host/cmd/genload

plugins: $(WASM)

# Plugins are Go built for wasip1 as reactors (c-shared) exporting functions with //go:wasmexport.
$(BUILD)/plugins/%.wasm: FORCE
	@mkdir -p $(@D)
	$(FIRST)
	GOOS=wasip1 GOARCH=wasm $(GO) build -v -buildmode=c-shared -trimpath -ldflags="-s -w" -o $@ ./plugins/$*

bench: build
	./$(BUILD)/genload run -c $(CONFIG)

# sweep.toml: four built-in engines (two cost-model profiles × speculative decoding off and
# on) at time scale 0.05, each started, measured and stopped in turn; a summary per point.
SWEEP     ?= sweep.toml
SWEEP_OUT ?= results/sweep-$(shell date -u +%Y%m%d-%H%M%S)
sweep: build
	./$(BUILD)/genload sweep $(SWEEP) --out $(SWEEP_OUT)

# Every test run goes through testsum: it prints what plain go test prints (a line per package,
# the output of failures) and records each test's outcome, so that make test can end with the
# skipped tests, grouped by their reason, and one line of counts. bash with pipefail, so that a
# go test that fails before testing anything fails the recipe too.
SHELL       := bash
.SHELLFLAGS := -o pipefail -c
GOTEST      := $(GO) test -json -count=1
TESTSUM     := $(BUILD)/tools/testsum
OUTCOMES    := $(BUILD)/test-outcomes.jsonl
$(TESTSUM): FORCE
	$(GO) build -o $@ ./host/internal/testsum

# The conformance suite holds genload's figures to within 1 % of the built-in engine's truth
# in real time (steps of 7–9 ms): it runs alone, after the other packages, so that their
# test binaries do not share its two cores.
CONFORMANCE := ./host/internal/conformance
# go test runs the packages in the order given, -p (the cores) at a time: the packages whose
# tests take longest go first, so that a phase does not end with one of them running alone
# on one core (cmd/genload waits on engines in real time; tokenizer and prompt encode). The
# rest follow in `go list` order.
MODULE      := github.com/genload/genload
SLOW_PKGS   := ./host/cmd/genload ./host/tokenizer ./host/prompt ./host/sweep ./host/plugin ./host/htmlreport
TEST_PKGS   = $$({ printf '$(MODULE)/%s\n' $(SLOW_PKGS:./%=%); $(GO) list ./...; } | awk '!seen[$$0]++' | grep -v '/host/internal/conformance$$')
# tools/k8s is a module of its own (k8s.io/api stays out of genload's go.mod): it decodes the
# Kubernetes manifests strictly into the API types and simulates the Indexed Job locally.
test: plugins lint $(TESTSUM)
	@rm -f $(OUTCOMES)
	$(GOTEST) $(TEST_PKGS) | $(TESTSUM) -record $(OUTCOMES)
	$(GOTEST) $(CONFORMANCE) | $(TESTSUM) -record $(OUTCOMES)
	cd tools/k8s && $(GO) vet ./... && $(GOTEST) ./... | $(CURDIR)/$(TESTSUM) -record $(CURDIR)/$(OUTCOMES)
	$(MAKE) --no-print-directory race
	@$(TESTSUM) -summary $(OUTCOMES)

# The packages that run goroutines of their own (clients, servers, scrapers, the CLI that drives
# them), tested again under the race detector, the longest first (as TEST_PKGS). The
# client-against-engine checks compare timings within 10 %, so they run alone, not beside the
# other race-instrumented test binaries.
RACE_PKGS := ./host/cmd/genload ./host/sweep ./host/run ./host/dispatch ./host/engine ./host/sse ./host/scrape
race: $(TESTSUM)
	$(GOTEST) -race $(RACE_PKGS) | $(TESTSUM) -record $(OUTCOMES)
	$(GOTEST) -race ./host/internal/clientcheck | $(TESTSUM) -record $(OUTCOMES)

# staticcheck at a pinned version, run from the Go module proxy (nothing added to go.mod).
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
lint:
	$(GO) vet ./...
	GOBIN=$(CURDIR)/$(BUILD)/tools $(GO) install $(STATICCHECK)
	$(BUILD)/tools/staticcheck ./...

# genload's own costs against baselines in the same process (see PERF.md): about
# 5 minutes on 2 cores. Not part of test: it reports, it asserts nothing.
PERF_ROUNDS ?= 5
perf: plugins
	$(GO) run ./host/perf/cmd/genload-perf -rounds $(PERF_ROUNDS) -out $(BUILD)/perf

clean:
	rm -rf $(BUILD)

FORCE:
