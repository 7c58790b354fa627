# genload — the two commands that matter:
#   make bench   build host + plugins, run bench.toml against the built-in engine
#   make test    every test (CI runs this through .ci/run)
GO      ?= go
BUILD   := build
PLUGINS := gamma uniform router-rr
WASM    := $(PLUGINS:%=$(BUILD)/plugins/%.wasm)
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
CONFIG  ?= bench.toml

# Tests and the binary find plugins here by name.
export GENLOAD_PLUGIN_DIR := $(CURDIR)/$(BUILD)/plugins

.PHONY: all build plugins bench test lint race perf clean FORCE
all: build

build: $(BUILD)/genload plugins

$(BUILD)/genload: FORCE
	$(GO) build -trimpath -ldflags "-X main.version=$(VERSION)" -o $@ ./host/cmd/genload

plugins: $(WASM)

# Plugins are Go built for wasip1 as reactors (c-shared) exporting functions with //go:wasmexport.
$(BUILD)/plugins/%.wasm: FORCE
	@mkdir -p $(@D)
	GOOS=wasip1 GOARCH=wasm $(GO) build -buildmode=c-shared -trimpath -ldflags="-s -w" -o $@ ./plugins/$*

bench: build
	./$(BUILD)/genload run -c $(CONFIG)

# The conformance suite holds genload's figures to within 1 % of the built-in engine's truth
# in real time (steps of 7–9 ms): it runs alone, after the other packages, so that their
# test binaries do not share its two cores.
CONFORMANCE := ./host/internal/conformance
test: plugins lint
	$(GO) test -count=1 $$($(GO) list ./... | grep -v '/host/internal/conformance$$')
	$(GO) test -count=1 $(CONFORMANCE)
	$(MAKE) --no-print-directory race

# The packages that run goroutines of their own (clients, servers, scrapers, the CLI that drives
# them), tested again under the race detector. The client-against-engine checks compare timings
# within 10 %, so they run alone, not beside the other race-instrumented test binaries.
RACE_PKGS := ./host/dispatch ./host/run ./host/sse ./host/engine ./host/scrape ./host/cmd/genload
race:
	$(GO) test -race -count=1 $(RACE_PKGS)
	$(GO) test -race -count=1 ./host/internal/clientcheck

# staticcheck at a pinned version, run from the Go module proxy (nothing added to go.mod).
# STATICCHECK_KNOWN are findings in files the next change of their package fixes, as extended
# regular expressions of "file:line:col: message (check)"; each must still be reported, so an
# entry has to go when its finding does, and any other finding fails.
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
STATICCHECK_KNOWN :=
lint:
	$(GO) vet ./...
	@set -f; out=$$($(GO) run $(STATICCHECK) ./... 2>&1 | grep -v '^exit status'); rest="$$out"; \
	for k in $(STATICCHECK_KNOWN); do \
		printf '%s\n' "$$out" | grep -qE "$$k" || { echo "staticcheck: the known finding $$k is gone: remove it from STATICCHECK_KNOWN in the Makefile"; exit 1; }; \
		rest=$$(printf '%s\n' "$$rest" | grep -vE "$$k"); \
	done; \
	if [ -n "$$rest" ]; then printf 'staticcheck:\n%s\n' "$$rest"; exit 1; fi; \
	echo "staticcheck $(STATICCHECK): clean (known: $(words $(STATICCHECK_KNOWN)))"

# genload's own costs against baselines in the same process (see PERF.md): about
# 5 minutes on 2 cores. Not part of test: it reports, it asserts nothing.
PERF_ROUNDS ?= 5
perf: plugins
	$(GO) run ./host/perf/cmd/genload-perf -rounds $(PERF_ROUNDS) -out $(BUILD)/perf

clean:
	rm -rf $(BUILD)

FORCE:
