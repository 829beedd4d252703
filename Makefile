# idgen: the front door. `make help` lists the targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help

# The Go the project pins (.go-version: the crypto/tls, crypto/x509 and net/http fixes), fetched
# from the Go module proxy on first use.
export GOTOOLCHAIN := $(shell cat .go-version)
export PATH := $(CURDIR)/.tools/bin:$(PATH)

# Every module of the workspace, as ./path/... patterns.
MODULES = $(shell go list -f '{{.Dir}}' -m | sed "s|^$(CURDIR)|.|")
PKGS    = $(addsuffix /...,$(MODULES))
FUZZTIME ?= 5s
CHAOS_DURATION ?= 5m
CHAOS_RESULTS ?= .idgen/chaos/results.json
GAMEDAY_SCENARIO ?= tools/gameday/scenarios/default.json

.PHONY: help
help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

.PHONY: run
run: ## run the local platform on embedded defaults (state under .idgen/)
	@scripts/run-local.sh

.PHONY: observe
observe: ## Prometheus and Alertmanager with idgen's alert rules, scraping make run's stack
	@scripts/observe.sh

.PHONY: setup
setup: ## install what the tests need (Go tools at pinned versions, dynalite, redis-server)
	@scripts/setup.sh

.PHONY: test
test: setup ## install what the tests need when missing, then verify, lint and run every module's tests
	$(MAKE) --no-print-directory verify lint checkgenerate infra-lint build-arm64 vulncheck
	go test -race -count=1 -timeout 20m $(PKGS)
	scripts/test-run-local.sh
	$(MAKE) --no-print-directory fuzz FUZZTIME=$(FUZZTIME)

.PHONY: infra-lint
infra-lint: ## terraform fmt -check, tflint (core rules) and the AWS provider schema check (@cdktf/provider-aws) over infra/terraform
	TF_CLI_CONFIG_FILE=/dev/null terraform fmt -check -recursive infra/terraform
	TF_CLI_CONFIG_FILE=/dev/null tflint --chdir infra/terraform --recursive --minimum-failure-severity=warning
	go run ./infra/cmd/tfschema

.PHONY: vulncheck
vulncheck: ## govulncheck (symbol level, local database) over what ships: fails on a reachable vulnerability not in tools/vulncheck/allow.txt
	go run ./tools/vulncheck -C services/generator -db .tools/vulndb -allow tools/vulncheck/allow.txt -govulncheck govulncheck \
		./... ../registry/... ../public-id/... ../../tools/idgenctl/... ../../libs/idclient/... ../../libs/uuidv7/...

.PHONY: build-arm64
build-arm64: ## build the services for linux/arm64, the fleet's Graviton hosts
	GOOS=linux GOARCH=arm64 go build -o /dev/null ./services/generator/cmd/generator
	GOOS=linux GOARCH=arm64 go build -o /dev/null ./services/registry/cmd/registry
	GOOS=linux GOARCH=arm64 go build -o /dev/null ./services/public-id/cmd/public-id
	GOOS=linux GOARCH=arm64 go build -o /dev/null ./services/public-id/cmd/public-id-gateway

.PHONY: fuzz
fuzz: ## run every fuzz target for FUZZTIME each (make fuzz FUZZTIME=10m for a long run)
	@scripts/fuzz.sh $(FUZZTIME) $(PKGS)

.PHONY: model-deep
model-deep: ## the lease model with every feature together, bitstate, 12 min a run, two runs side by side (not exhaustive; make test runs the exhaustive subsets)
	IDGEN_MODEL_DEEP=1 go test -count=1 -timeout 30m -run 'TestModelDeep' -v ./model

.PHONY: bench
bench: ## run the benchmarks, with the comparison libraries, in one run
	go test -run '^$$' -bench . -benchtime=2s $(PKGS)

.PHONY: bench-http
bench-http: ## HTTP benchmarks of the generator against a bare net/http baseline, same run
	@scripts/bench-http.sh

.PHONY: bench-publicid
bench-publicid: ## public-ID API on Redis against bare net/http and redis-benchmark, same run
	@scripts/bench-publicid.sh

.PHONY: soak
soak: ## the generator, then the public-ID service, under full load for SOAK_DURATION each (default 10m; SOAK=generator or public-id for one), sampling memory
	@scripts/soak.sh

.PHONY: chaos
chaos: ## generators and embedded nodes as real processes on dynalite and SQLite, under seeded faults (processes, stores, operators, restores, clocks) for CHAOS_DURATION (default 5m, well over 10^7 IDs; not part of make test): no duplicate ID; the results in CHAOS_RESULTS (.idgen/chaos/results.json)
	go run ./tools/chaos --duration $(CHAOS_DURATION) --results $(CHAOS_RESULTS)

.PHONY: gameday
gameday: ## five regions on this machine (registry, generators behind a load balancer per region, embedded nodes, callers through libs/idclient configured from the topology's plan) through a region killed, frozen and fenced, a rolling deploy, the registry down while a region's generators restart, and back, and the public-ID side of three regions (stores, internal APIs, gateways, customers publishing and opening orders) through a region lost for good and refilled, a frozen store and a partitioned pair, from a printed seed (GAMEDAY_SCENARIO, GAMEDAY_SEED): a table per phase and a timeline picture, non-zero on a failed check (not part of make test)
	go run ./tools/gameday/cmd/gameday --scenario $(GAMEDAY_SCENARIO) $(if $(GAMEDAY_SEED),--seed $(GAMEDAY_SEED))

.PHONY: lint
lint: ## gofmt, go vet, staticcheck and housecheck (one writer of the local client config, the import layers: tools/housecheck) over every module
	@test -z "$$(gofmt -l $(MODULES))" || { gofmt -l $(MODULES); echo "gofmt: files above need formatting"; exit 1; }
	go vet $(PKGS)
	staticcheck $(PKGS)
	go run ./tools/housecheck

.PHONY: release
release: ## release every library of release/versions.txt at VERSION (make release VERSION=v0.2.0): a clean tree, requirements and go.sum at VERSION, API files, changelog, a commit and a tag per library (libs/idcore/v0.2.0, ...) in dependency order; prints the push
	@scripts/release.sh $(VERSION)

.PHONY: generate
generate: ## regenerate libs/api from proto/ (buf with local plugins)
	cd proto && buf lint && buf format -w && buf generate && buf build --exclude-imports -o ../libs/api/idgen/v1/idgen.binpb

.PHONY: checkgenerate
checkgenerate: ## fail when proto/ is unformatted, fails lint, or libs/api is stale
	@scripts/checkgenerate.sh

.PHONY: verify
verify: ## go mod tidy is clean in every module, and each builds without the workspace
	@scripts/verify.sh $(MODULES)
