# toolq. On a fresh machine: `make run` starts the demo, `make test` runs what CI runs.

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

GO      ?= go
# The garbage collector runs a quarter as often as by default in everything make starts (the
# compiler, go vet, staticcheck, the tests): CI is bound by two cores' CPU, of which the default
# spent a fifth to a quarter collecting (lint 92 -> 70 CPU-seconds, the server's tests 58 -> 54),
# and the machine has memory to spare. A GOGC of your own wins.
GOGC    ?= 400
export GOGC
BIN     := bin/dashboard
# No tags or commits yet is fine: the version falls back to "dev".
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
STAMP   := -X main.version=$(VERSION) -X main.commit=$(COMMIT)
LDFLAGS := -s -w $(STAMP)
# The npm packages of the simulator's third-party client suites.
CLIENTS := sqsim/testdata/clients
# The npm packages the notifier's Teams cards are parsed with (adaptivecards, markdown-it).
CARDS   := internal/notify/testdata/cards

.PHONY: help run test test-unit-lane test-beside-unit test-unit test-clients test-postgres test-browser test-docs test-deploy stress templ-check bench bench-serve build generate lint docker clean

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

run: ## the demo on http://127.0.0.1:8080: simulator, traffic and dashboard, no AWS account
	$(GO) run -ldflags "$(STAMP)" ./cmd/dashboard demo

# Every test once, with the race detector but for the browser tests (see test-browser); a test
# that fails fails the run. make test runs six parts, each one go test run that a developer can
# start alone:
#   test-unit      every package not named below; needs Go and nothing else
#   test-clients   the simulator and the traffic, with the third-party clients (JavaScript SDK,
#                  boto3, aws CLI, moto, kumo), and the tests elsewhere whose names say Moto,
#                  Kumo, AWSCLI or AdaptiveCards (the collector and the binary against those
#                  peers, the notifier's Teams cards through Microsoft's parser)
#   test-postgres  the store on SQLite and PostgreSQL, and the replicas
#   test-browser   the binary's demo in Chromium (e2e/)
#   test-docs      the examples of README.md and docs/ against the binary's demo (docs/)
#   test-deploy    the Prometheus rules and the Grafana dashboard of deploy/: promtool, and a
#                  Prometheus server scraping the binary's demo (deploy/)
# TESTJSON=dir also keeps each part's go test -json output, dir/test-<part>.json, for timings.
#
# -race also turns on checkptr, which checks every unsafe.Pointer conversion as it runs.
# modernc.org/sqlite is SQLite's C translated into Go, pointer arithmetic by design: checkptr
# over it checks none of toolq's code and took 40% of the CPU of the tests that write to the
# store. It is off for modernc.org's packages alone; the race detector stays on for them.
#
# -vet=off: go test would run a few of go vet's checks on each package before its tests; make
# lint runs all of them on the same packages, test files included, and CI runs make lint first.
TESTFLAGS    := -race -count=1 -vet=off -gcflags='modernc.org/...=-d=checkptr=0'
GOTESTSUM     = $(GO) tool gotestsum --format standard-quiet $(if $(TESTJSON),--jsonfile $(TESTJSON)/$@$(1).json)
CLIENT_TESTS := Moto|Kumo|AWSCLI|AdaptiveCards
CLIENT_ELSEWHERE := ./internal/collector ./internal/engine ./cmd/dashboard ./internal/notify
NOT_UNIT     := ^github.com/toolq/toolq/(e2e|docs|deploy|sqsim|traffic|internal/(store|replicas|pgtest))(/|$$)

# make test runs two lanes side by side: test-unit then test-deploy, and the other parts one
# after another. The unit tests keep the CPU busy, the others mostly wait (on PostgreSQL,
# Chromium, a demo's real clock), so side by side they take the time of the longer lane instead
# of the sum. test-deploy (mostly waiting on a demo and Prometheus) ends the first lane, which
# was the shorter by a minute; by then the browser tests have built the demo it starts. Each
# part's output is printed whole when it ends (make's --output-sync).
test: templ-check ## everything CI runs: generated code up to date, then every test
	$(MAKE) --no-print-directory -j2 --output-sync=target test-unit-lane test-beside-unit

test-unit-lane:
	$(MAKE) --no-print-directory test-unit
	$(MAKE) --no-print-directory test-deploy

test-beside-unit:
	$(MAKE) --no-print-directory test-browser
	$(MAKE) --no-print-directory test-postgres
	$(MAKE) --no-print-directory test-clients
	$(MAKE) --no-print-directory test-docs

test-unit: ## the tests that need Go alone
	$(call GOTESTSUM) --packages "$$($(GO) list ./... | grep -Ev '$(NOT_UNIT)' | tr '\n' ' ')" -- $(TESTFLAGS) -skip '$(CLIENT_TESTS)'

test-clients: $(CLIENTS)/node_modules/.installed $(CARDS)/node_modules/.installed ## the simulator and the traffic with the third-party clients, and the collector and the binary against them
	$(call GOTESTSUM) --packages "./sqsim/... ./traffic/..." -- $(TESTFLAGS)
	$(call GOTESTSUM,-elsewhere) --packages "$(CLIENT_ELSEWHERE)" -- $(TESTFLAGS) -run '$(CLIENT_TESTS)'

test-postgres: ## the store on SQLite and PostgreSQL, the replicas
	$(call GOTESTSUM) --packages "./internal/store/... ./internal/replicas/... ./internal/pgtest/..." -- $(TESTFLAGS)

# The browser tests run in parallel, each in a tab of its own: most of their time is the demo's
# real clock (a minute of pushes, a FIFO session blocking), not the CPU. They and the demo they
# drive run without the race detector: the demo's code runs under it in the tests of
# cmd/dashboard (the whole demo, in process), internal/server (pages, pushes, websockets) and
# the rest, and a race-built demo took five times the CPU, so that its real-clock cadences
# slipped whenever anything ran beside it.
E2EFLAGS := -count=1 -parallel 8
test-browser: ## the binary's demo driven in Chromium
	$(call GOTESTSUM) --packages "./e2e/..." -- $(E2EFLAGS)

test-docs: $(CLIENTS)/node_modules/.installed ## the examples of README.md and docs/, run against the demo
	$(call GOTESTSUM) --packages "./docs/..." -- $(TESTFLAGS)

# Debian's prometheus package (Prometheus and promtool) checks the rules and their unit tests,
# and runs a server that scrapes the demo, about 40 s of mostly waiting on the demo's clock (a
# redrive's messages failing again, CloudWatch's first datapoint). Without the package the tests
# skip, and fail under CI=true, where .ci/run installs it.
test-deploy: ## the Prometheus rules and Grafana dashboard of deploy/, against Prometheus scraping the demo
	$(call GOTESTSUM) --packages "./deploy/..." -- $(TESTFLAGS)

# The counting collector tests, six processes at once with the race detector, ten times each:
# the load under which a lost answer made the SDK send a call twice (see internal/awsconf's
# requestbody.go). Not part of make test: it takes minutes of both cores.
STRESS := TestPeekCapAndHostileBodies|TestIdleMessagesKeepTheirTries|TestCostEstimateAgreesWithCallCounts
stress: ## the collector's call-counting tests under load, to find lost answers
	mkdir -p bin
	$(GO) test $(TESTFLAGS) -c -o bin/collector.test ./internal/collector
	cd internal/collector && for i in 1 2 3 4 5 6; do \
		../../bin/collector.test -test.run '$(STRESS)' -test.count=10 > ../../bin/stress-$$i.log 2>&1 & \
	done; failed=0; for job in $$(jobs -p); do wait $$job || failed=1; done; \
	grep -h -e '--- FAIL' -e 'closed network' ../../bin/stress-*.log || true; exit $$failed

# The simulator's third-party client suites (sqsim/clients_test.go) run the JavaScript SDK from
# pinned packages, and the notifier's Teams card test (internal/notify/teams_test.go) Microsoft's
# adaptivecards. npm ci installs a directory's packages when its node_modules is missing or
# older than its lockfile. Without npm, or when npm ci fails (offline), those tests skip with
# the reason, and fail under CI=true, where .ci/run has installed npm.
%/node_modules/.installed: %/package-lock.json %/package.json
	@if ! command -v npm >/dev/null; then \
		echo "npm not found: the node tests of $* will skip" >&2; \
	elif (cd $* && npm ci --no-audit --no-fund --loglevel=error); then \
		touch $@; \
	else echo "npm ci failed in $*: the node tests of $* will skip" >&2; fi

# templ generate -check fails when a *_templ.go file does not match its .templ source. It is
# skipped until the first .templ file exists.
templ-check: ## check that the committed *_templ.go files match their .templ sources
	@if [ -n "$$(find . -name '*.templ' -not -path './.git/*' -print -quit)" ]; then \
		$(GO) tool templ generate -check || { echo "generated templ code is stale: run 'make generate' and commit the result" >&2; exit 1; }; \
	fi

bench: ## every Go benchmark, once, with allocations; then bench-serve (OLD=commit to compare)
	$(GO) test -run '^$$' -bench . -benchmem ./...
	$(MAKE) --no-print-directory bench-serve

# What users of serve see, from outside it: cmd/servebench starts sim and serve from a binary,
# makes a fleet on the simulator, and times real HTTP and websocket clients. It runs the build
# of OLD (a commit, default main) and of the working tree one after the other, in the same run,
# at 10,000 queues (the page) and at 1,000 with 1,000 websocket clients (the pushes). Minutes;
# not part of make test. docs/performance.md quotes its output.
OLD ?= main
bench-serve: ## serve's page, RSS and pushes from outside, the OLD commit's build beside this one's
	rm -rf bin/old-src && mkdir -p bin/old-src && git archive $(OLD) | tar -x -C bin/old-src
	cd bin/old-src && CGO_ENABLED=0 $(GO) build -trimpath -o ../dashboard-old ./cmd/dashboard
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/dashboard-new ./cmd/dashboard
	$(GO) build -o bin/servebench ./cmd/servebench
	for b in old new; do bin/servebench -dashboard bin/dashboard-$$b -label "$$b, 10,000 queues" -pairs 5000 -holding 1; done
	for b in old new; do bin/servebench -dashboard bin/dashboard-$$b -label "$$b, 1,000 queues" -pairs 500 -holding 1 -ws 1000; done

build: ## a static binary in bin/dashboard with the version stamped in
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/dashboard

generate: ## regenerate the templ components' Go code and the compressed static assets
	$(GO) tool templ generate
	$(GO) generate ./web/static

lint: ## gofmt must have nothing to say, go vet and staticcheck neither
	@unformatted=$$(find . -name '*.go' -not -path './.git/*' -not -path '*/testdata/*' -exec gofmt -l {} +); \
	if [ -n "$$unformatted" ]; then echo "gofmt -w needed on:" >&2; echo "$$unformatted" >&2; exit 1; fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...

docker: ## the container image, tagged toolq
	docker build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) -t toolq .

clean: ## remove what the build left
	rm -rf bin $(CLIENTS)/node_modules
