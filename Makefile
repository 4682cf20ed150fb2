# pvectl — see README.md. `make demo` and `make test` do all the set-up.
GO      ?= go
BIN     := bin/pvectl
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)
GOFILES  = $(shell find cmd pkg internal -name '*.go' 2>/dev/null)

.PHONY: all build test unit lint demo bench generate clean

all: build

build:
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/pvectl

# The whole suite: lint, unit tests, end-to-end tests against the simulator
# (the e2e tests build the binary themselves).
test: lint
	$(GO) test -race -count=1 -timeout 15m ./...

lint:
	@out=$$(gofmt -l $(GOFILES)); if [ -n "$$out" ]; then echo "gofmt -w needed on:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# Build, start the embedded simulator on a free loopback port, plan and
# apply examples/, then show that a second plan is clean.
demo: build
	./scripts/demo.sh $(BIN) examples

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./pkg/...

generate:
	$(GO) generate ./...

clean:
	rm -rf bin
