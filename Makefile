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

.PHONY: all build plugins bench test perf clean FORCE
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

test: plugins
	$(GO) vet ./...
	$(GO) test -count=1 ./...

# genload's own costs against baselines in the same process (issue 8; see PERF.md): about
# 5 minutes on 2 cores. Not part of test: it reports, it asserts nothing.
PERF_ROUNDS ?= 5
perf: plugins
	$(GO) run ./host/perf/cmd/genload-perf -rounds $(PERF_ROUNDS) -out $(BUILD)/perf

clean:
	rm -rf $(BUILD)

FORCE:
