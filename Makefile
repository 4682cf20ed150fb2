# pvectl — see README.md. `make demo` and `make test` do all the set-up.
GO      ?= go
BIN     := bin/pvectl
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
# The commit and its date (UTC, as goreleaser's CommitDate) for `pvectl version`.
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null)
DATE    ?= $(shell TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null)
LDFLAGS := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DATE)
GOFILES  = $(shell find cmd pkg internal -name '*.go' 2>/dev/null)

# The race detector needs cgo, that is a C compiler; without one the tests
# run without it (and say so). RACE= turns it off.
RACE    ?= $(if $(shell command -v $(CC) 2>/dev/null),-race,)
# Each fuzz target runs this long in `make test` (its seed corpus always runs
# with the unit tests).
FUZZTIME ?= 10s
# staticcheck, pinned; `go run` fetches it through the module proxy (it is a
# tool, so go.mod does not list it).
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
# deadcode, pinned the same way: a function no program or test reaches
# fails lint (issue 19: no unreachable code).
DEADCODE ?= golang.org/x/tools/cmd/deadcode@v0.53.0
FUZZ     := ./pkg/spec:FuzzLoad ./pkg/pve/schema:FuzzPropertyStringRoundTrip ./pkg/pve:FuzzDecodeConfigJSON ./pkg/pve:FuzzEnvelopeMembers ./pkg/pve:FuzzClusterResourceJSON

.PHONY: all build test unit lint fuzz demo bench bench-all generate release-check release-snapshot clean

all: build

# Built as the releases are (.goreleaser.yaml: CGO_ENABLED=0): a static
# binary, which also starts ~3 ms sooner than one linked against libc.
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/pvectl

# The whole suite: lint, unit tests, end-to-end tests against the simulator
# (the e2e tests build the binary themselves), then a bounded fuzz run.
test: lint
	@[ -n "$(RACE)" ] || echo "note: no C compiler ($(CC)): running the tests without the race detector"
	$(GO) test $(RACE) -count=1 -timeout 15m ./...
	$(MAKE) --no-print-directory fuzz

# Go's fuzz coordinator can end a run at -fuzztime with "context deadline
# exceeded" while a worker is still busy, writing no failing input: that
# is the clock, not a finding, and is reported as such. A real finding
# ("Failing input written to testdata/fuzz/…") always fails.
fuzz:
	@for t in $(FUZZ); do \
	  pkg=$${t%%:*}; name=$${t##*:}; \
	  echo "$(GO) test -run '^$$' -fuzz '^$$name\$$' -fuzztime $(FUZZTIME) $$pkg"; \
	  out=$$($(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $$pkg 2>&1); rc=$$?; \
	  echo "$$out"; \
	  if [ $$rc -ne 0 ]; then \
	    if echo "$$out" | grep -q 'context deadline exceeded' && ! echo "$$out" | grep -q 'Failing input written'; then \
	      echo "note: $$name ended on the fuzz deadline with no failing input (not a finding)"; \
	    else exit 1; fi; \
	  fi; \
	done

lint:
	@out=$$(gofmt -l $(GOFILES)); if [ -n "$$out" ]; then echo "gofmt -w needed on:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	@out=$$($(GO) run $(DEADCODE) -test ./...) || exit 1; if [ -n "$$out" ]; then echo "unreachable code:"; echo "$$out"; exit 1; fi

# Build, start the embedded simulator on a free loopback port, plan and
# apply examples/, then show that a second plan is clean.
demo: build
	./scripts/demo.sh $(BIN) examples

# The figures of docs/performance.md, each printed as a ratio to its ideal
# or bound (x-ideal, x-bound, ms-late…): the task benchmarks in process,
# then the CLI against `pvectl sim --task-duration 50ms`. Opt-in sizes:
# PVECTL_BENCH_N=2000 (the short-task counts), PVECTL_BENCH_SCALE=5000,50000
# (BenchmarkPlanScale). bench-all runs every benchmark.
bench: build
	$(GO) test -run '^$$' -bench 'BenchmarkShortTasks|BenchmarkDependsOnChain|BenchmarkTaskLag|BenchmarkApplyCreates|BenchmarkPlanScale|BenchmarkPlan/vms=500/latency=20ms' -benchtime 1x -timeout 30m ./pkg/planner
	$(GO) test -run '^$$' -bench BenchmarkTaskNoticed -benchtime 20x ./pkg/pve
	N=$${PVECTL_BENCH_N:-200} ./scripts/bench-tasks.sh $(BIN)

bench-all:
	$(GO) test -run '^$$' -bench . -benchmem ./pkg/...

# Regenerates what is derived and committed: the schema facts table, the
# spec JSON Schema (docs/pvectl.schema.json) and the CLI reference
# (docs/cli); tests fail when these are stale.
generate:
	$(GO) generate ./...

# Release archives for linux/darwin/windows × amd64/arm64 with checksums,
# into dist/ (nothing is published), from .goreleaser.yaml.
GORELEASER ?= goreleaser
release-check:
	@command -v $(GORELEASER) >/dev/null || { echo "$(GORELEASER) is not installed: https://goreleaser.com/install"; exit 1; }
	$(GORELEASER) check

release-snapshot: release-check
	$(GORELEASER) release --snapshot --clean

clean:
	rm -rf bin dist
