# edgeway: `make run` serves examples/edgeway.conf; `make test` runs every test.
GO        ?= go
BIN       ?= bin/edgeway
VERSION   ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
# The peer benchmark harness, a folder not shipped in this repository (README).
BENCH_DIR ?= ../shared/bench
# Packages with concurrency, tested again under the race detector.
RACE_PKGS ?= ./router/... ./upstream/... ./listeners/... ./routes/rule/... ./cmd/... ./admin/... ./conf/... ./internal/... ./tls/... ./acme/... ./cluster/...
FUZZTIME  ?= 30s

H2SPEC    ?= github.com/summerwind/h2spec/cmd/h2spec@v2.2.1+incompatible
# pebble and pebble-challtestsrv: the ACME tests' CA (acme/acmetest's
# PebbleModule names the same release).
PEBBLE    ?= github.com/letsencrypt/pebble/v2/cmd/...@v2.10.3
TOOLS     := $(CURDIR)/bin/tools

.PHONY: all build run test test-stress check vet fmt race peers tools acme-local bench bench-idle bench-slow bench-bulk bench-ws bench-h2 bench-tls bench-h3 bench-policy bench-compress bench-grpc bench-go fuzz clean

all: build

build:
	$(GO) build -trimpath -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/edgeway

run: build
	$(BIN) run -c examples/edgeway.conf

# test: formatting, vet, every package's tests, then the race detector on the
# concurrent packages. Go installs the test peers it can (make tools); curl,
# openssl, promtool and chromium come from the system (make peers says how
# when one is missing). The end-to-end package runs for 4 to 8 minutes on a
# loaded 2-core machine under the race detector: 30 minutes a package,
# not Go's default 10, so that a slower machine does not time it out.
test: check peers tools
	$(GO) test -count=1 -timeout 30m ./...
	$(GO) test -count=1 -timeout 30m -race $(RACE_PKGS)

check: fmt vet

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

# peers: the system's test peers, curl with HTTP/2, openssl, promtool
# (Debian's prometheus package ships it) and chromium (the dashboard's
# browser test); a missing one is named with the line that installs it,
# before any test runs.
peers:
	@missing=; \
	curl --version 2>/dev/null | grep -q HTTP2 || missing="$$missing curl"; \
	command -v openssl >/dev/null || missing="$$missing openssl"; \
	command -v promtool >/dev/null || missing="$$missing prometheus"; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	if [ -n "$$missing" ]; then \
		echo "the tests need$$missing: sudo apt-get install -y --no-install-recommends$$missing ca-certificates (.ci/run does)"; exit 1; fi

# tools: the test peers installed with go install (h2spec, pebble) into
# bin/tools, so that `make test` needs nothing but Go (and curl, openssl).
tools: $(TOOLS)/h2spec $(TOOLS)/pebble

$(TOOLS)/h2spec:
	GOBIN=$(TOOLS) $(GO) install $(H2SPEC)

$(TOOLS)/pebble:
	GOBIN=$(TOOLS) $(GO) install $(PEBBLE)

race:
	$(GO) test -count=1 -race $(RACE_PKGS)

# test-stress: the race suite three times over while STRESS_HOGS busy
# loops keep the cores busy (two: CI's 2-core machine), as on a CI machine
# still busy with other work; a test that fails here tests the machine,
# not the code (issue 16). The loops end with the target, pass or fail.
STRESS_HOGS ?= 2
test-stress:
	@pids=; for i in $$(seq $(STRESS_HOGS)); do sh -c 'while :; do :; done' & pids="$$pids $$!"; done; \
	trap 'kill $$pids 2>/dev/null' EXIT INT TERM; \
	$(GO) test -count=3 -timeout 60m -race $(RACE_PKGS)

# acme-local: edgeway ordering a certificate from pebble on this machine
# (scripts/acme-local.sh; KEEP=1 keeps it serving).
acme-local: build tools
	scripts/acme-local.sh

# bench: edgeway beside nginx, HAProxy and Caddy (run-peers.sh in BENCH_DIR).
bench: build
	scripts/bench.sh peers

# bench-slow: slowloris, slow uploaders and slow readers beside good
# clients, edgeway beside nginx and HAProxy (scripts/bench-slow.sh).
bench-slow: build
	scripts/bench-slow.sh

# bench-bulk: a 100 MB download and upload through edgeway and nginx
# against the same transfer made directly (scripts/bench-bulk.sh).
bench-bulk: build
	scripts/bench-bulk.sh

# bench-idle: memory per idle keep-alive connection (idle-conns.sh).
bench-idle: build
	scripts/bench.sh idle

# bench-ws: memory per idle WebSocket tunnel and echo latency (ws-conns.sh).
bench-ws: build
	scripts/bench.sh ws

# bench-h2: HTTP/2 over TLS beside the peers (h2-peers.sh).
bench-h2: build
	scripts/bench.sh h2

# bench-tls: idle TLS connections' memory, full handshakes/s and SNI
# passthrough throughput beside nginx and HAProxy (scripts/bench-tls.sh).
bench-tls: build
	scripts/bench-tls.sh all

# bench-h3: HTTP/3 beside HTTP/2 over TLS on one core, edgeway and Caddy
# (scripts/bench-h3.sh).
bench-h3: build
	scripts/bench-h3.sh

# bench-policy: CPU per request with no policy, a rate limit and jwt on a
# route; bench-compress: edgeway compress beside nginx gzip, CPU per
# compressed response and ratio (scripts/bench-policy.sh; no BENCH_DIR).
bench-policy: build
	scripts/bench-policy.sh auth
bench-compress: build
	scripts/bench-policy.sh compress

# bench-grpc: grpc-go unary calls through edgeway beside nginx grpc_pass
# and HAProxy proto h2 in one run, calls/s and proxy CPU per call on one
# core (scripts/bench-grpc.sh; no BENCH_DIR; ports 27000-27003).
bench-grpc:
	scripts/bench-grpc.sh

# bench-go: the Go micro-benchmarks (matcher, guard, router).
bench-go:
	$(GO) test -run '^$$' -bench . -benchmem ./routes/... ./listeners/... ./router/... ./internal/http1/...

# fuzz: each native fuzz target for FUZZTIME.
fuzz:
	scripts/fuzz.sh $(FUZZTIME)

clean:
	rm -rf bin
