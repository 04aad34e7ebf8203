# toolq. On a fresh machine: `make run` starts the demo, `make test` runs what CI runs.

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

GO      ?= go
BIN     := bin/dashboard
# No tags or commits yet is fine: the version falls back to "dev".
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)
# The npm packages of the simulator's third-party client suites.
CLIENTS := sqsim/testdata/clients

.PHONY: help run test templ-check bench build generate lint docker clean

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

run: ## the demo on http://127.0.0.1:8080: simulator, traffic and dashboard, no AWS account
	$(GO) run ./cmd/dashboard demo

# Every test once, with the race detector, through gotestsum (go test -json underneath). The test
# binaries are compiled first (run with /bin/true, which runs nothing): on a machine without a
# build cache, compiling every package with the race detector while the first packages' tests
# run leaves those tests a fraction of the two cores, and tests against the in-process
# simulator then lose a response on loopback now and then, to a race in Go's HTTP client that
# the SDK answers by retrying (aws/aws-sdk-go-v2#2737) and a test counting every call cannot. A
# test that still fails is run once more on its own and the summary names it; a test that fails
# twice, more than ten failing tests, or a data race fails the run.
test: templ-check $(CLIENTS)/node_modules/.installed ## everything CI runs: generated code up to date, all tests with the race detector
	$(GO) test -race -count=1 -exec /bin/true ./... > /dev/null
	$(GO) tool gotestsum --format standard-quiet --packages ./... \
		--rerun-fails=1 --rerun-fails-max-failures=10 --rerun-fails-abort-on-data-race --rerun-fails-run-root-test \
		-- -race -count=1

# The simulator's third-party client suites (sqsim/clients_test.go) run the JavaScript SDK from
# these pinned packages. npm ci installs them when node_modules is missing or older than the
# lockfile. Without npm, or when npm ci fails (offline), the suite skips with the reason, and
# fails under CI=true, where .ci/run has installed npm.
$(CLIENTS)/node_modules/.installed: $(CLIENTS)/package-lock.json $(CLIENTS)/package.json
	@if ! command -v npm >/dev/null; then \
		echo "npm not found: the JavaScript SDK client suite will skip" >&2; \
	elif (cd $(CLIENTS) && npm ci --no-audit --no-fund --loglevel=error); then \
		touch $@; \
	else echo "npm ci failed in $(CLIENTS): the JavaScript SDK client suite will skip" >&2; fi

# templ generate -check fails when a *_templ.go file does not match its .templ source. It is
# skipped until the first .templ file exists.
templ-check: ## check that the committed *_templ.go files match their .templ sources
	@if [ -n "$$(find . -name '*.templ' -not -path './.git/*' -print -quit)" ]; then \
		$(GO) tool templ generate -check || { echo "generated templ code is stale: run 'make generate' and commit the result" >&2; exit 1; }; \
	fi

bench: ## every Go benchmark, once, with allocations
	$(GO) test -run '^$$' -bench . -benchmem ./...

build: ## a static binary in bin/dashboard with the version stamped in
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/dashboard

generate: ## regenerate the templ components' Go code and the compressed static assets
	$(GO) tool templ generate
	$(GO) generate ./web/static

lint: ## gofmt must have nothing to say, go vet neither
	@unformatted=$$(find . -name '*.go' -not -path './.git/*' -not -path '*/testdata/*' -exec gofmt -l {} +); \
	if [ -n "$$unformatted" ]; then echo "gofmt -w needed on:" >&2; echo "$$unformatted" >&2; exit 1; fi
	$(GO) vet ./...

docker: ## the container image, tagged toolq
	docker build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) -t toolq .

clean: ## remove what the build left
	rm -rf bin $(CLIENTS)/node_modules
