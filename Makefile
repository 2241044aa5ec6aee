# Rollcall — build, run and test. `make run` and `make test` first install the Debian
# packages the build and the tests need (only those missing; the TLS tests run `openssl` and
# `curl`; the broker loads libev4 at run time for lws' epoll loop; the Redis client links
# hiredis, libev and OpenSSL (libssl-dev), and its tests start their own redis-server, with TLS
# too (certificates made with `openssl`); the cluster tests and
# `make cluster` put Debian's nginx in front of three nodes; rollcall-bench (Benchmarks/) links zlib to inflate
# permessage-deflate frames, zlib1g-dev, which libwebsockets-dev also pulls in; the broker sends a
# broadcast's frames through io_uring, liburing-dev), then build with SwiftPM
# (debug build, so `make run` and `make test` share one build in .build/debug).

PACKAGES := libwebsockets-dev libev4 pkg-config libsqlite3-dev libssl-dev openssl curl libhiredis-dev libev-dev redis-server nginx zlib1g-dev liburing-dev
BROWSER_PACKAGES := chromium chromium-driver
## Only `make bench` needs these (the mosquitto comparison); `make test` does not.
BENCH_PACKAGES := mosquitto
PYTHON   ?= python3
CONFIG   ?= config.json
SUDO     := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)

.PHONY: deps browser-deps api-deps ops-deps build run cluster test test-builds test-bench-build test-swift test-swift-cluster test-swift-integration test-swift-alone test-ops test-api test-browser test-fuzz-replay test-consumer test-client-nolws fuzz test-asan test-tsan \
	chaos leak-check soak soak-js release bench bench-deps clean image image-deps test-image

## Install missing Debian packages (apt-get update runs only when something is missing).
deps:
	@if ! command -v dpkg >/dev/null; then echo "deps: no dpkg here; install $(PACKAGES) yourself"; exit 0; fi; \
	missing=""; \
	for package in $(PACKAGES); do dpkg -s $$package >/dev/null 2>&1 || missing="$$missing $$package"; done; \
	if [ -n "$$missing" ]; then \
		echo "deps: installing$$missing"; \
		$(SUDO) apt-get update && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing; \
	fi

## Install what the real-browser tests need: Debian's Chromium and its driver (only when
## missing), and Selenium, pytest and websockets (the console test's WebSocket clients) from
## PyPI (only when they cannot be imported; Debian's python3-selenium/python3-pytest/
## python3-websockets when pip refuses, e.g. an externally managed Python).
browser-deps:
	@if ! command -v dpkg >/dev/null; then echo "browser-deps: no dpkg here; install $(BROWSER_PACKAGES) yourself"; else \
	missing=""; \
	for package in $(BROWSER_PACKAGES); do dpkg -s $$package >/dev/null 2>&1 || missing="$$missing $$package"; done; \
	if [ -n "$$missing" ]; then \
		echo "browser-deps: installing$$missing"; \
		$(SUDO) apt-get update && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing; \
	fi; fi
	@$(PYTHON) -c "import selenium, pytest, websockets" 2>/dev/null || $(PYTHON) -m pip install --quiet selenium pytest websockets || \
	{ echo "browser-deps: pip could not install (externally managed Python?); trying Debian's python3-selenium python3-pytest python3-websockets"; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3-selenium python3-pytest python3-websockets; }

## What the operator checks (Tests/ops) need: Debian's prometheus (promtool) and systemd
## (systemd-analyze), each installed only when its tool is missing.
OPS_TOOLS := promtool:prometheus systemd-analyze:systemd
ops-deps:
	@missing=""; for tool in $(OPS_TOOLS); do command -v $${tool%%:*} >/dev/null || missing="$$missing $${tool#*:}"; done; \
	if [ -n "$$missing" ]; then \
		if ! command -v dpkg >/dev/null; then echo "ops-deps: no dpkg here; install$$missing yourself"; exit 1; fi; \
		echo "ops-deps: installing$$missing"; \
		$(SUDO) apt-get update && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing; \
	fi

## Operator checks against the real broker (Tests/ops/ops_check.py, a few seconds): promtool
## check metrics on /metrics of a single node and of a cluster node; the webhook receivers of
## docs/webhooks.md (Python, and JavaScript under Node) on a batch signed with two secrets;
## contrib/: systemd-analyze verify of the unit, promtool check rules, the metric names the
## alert rules and the Grafana dashboard use against live /metrics pages.
test-ops: ops-deps
	@[ -x .build/debug/rollcall ] || [ -n "$$ROLLCALL_BINARY" ] || swift build --product rollcall
	$(PYTHON) Tests/ops/ops_check.py

## What the server API suite (Tests/api) needs from PyPI, installed only when it cannot be
## imported: pytest, PyYAML, jsonschema, openapi-spec-validator, websockets, and schemathesis
## pinned to the 4.32 series (its checks, phases and hooks are what Tests/api/test_schemathesis.py
## and Tests/api/schemathesis_hooks.py are written for; another installed version is replaced).
SCHEMATHESIS_SERIES := 4.32
API_PY_MODULES  := pytest yaml jsonschema openapi_spec_validator websockets schemathesis
API_PY_PACKAGES := pytest pyyaml jsonschema openapi-spec-validator websockets "schemathesis~=$(SCHEMATHESIS_SERIES).0"
api-deps:
	@$(PYTHON) -c "import $(shell echo $(API_PY_MODULES) | tr ' ' ','); \
	assert schemathesis.__version__.startswith('$(SCHEMATHESIS_SERIES).')" 2>/dev/null || \
	$(PYTHON) -m pip install --quiet $(API_PY_PACKAGES) || \
	$(PYTHON) -m pip install --quiet --break-system-packages $(API_PY_PACKAGES)

## The server API (docs/api.md) against the real broker: every op and error status, each
## answer validated against docs/api/openapi.yaml, then schemathesis on the live broker with
## every check and its stateful phase (seeded, bounded: Tests/api/test_schemathesis.py).
test-api: api-deps
	@[ -x .build/debug/rollcall ] || swift build --product rollcall
	$(PYTHON) -m pytest -q -p no:cacheprovider Tests/api

## Build every target (debug).
build: deps
	swift build

## Build, then run the broker on $(CONFIG).
run: build
	.build/debug/rollcall --config $(CONFIG)

## Build, then run a local three-node cluster until Ctrl-C: redis-server on 127.0.0.1:6390 (in
## .build-cluster/, not the system service), nodes on 8081-8083 with config.cluster.json, nginx
## round-robin on 8080 in front (examples/cluster/run-cluster.sh, docs/cluster.md).
cluster: build
	examples/cluster/run-cluster.sh

## What the container image needs: Debian's buildah, podman and runc (only when missing).
IMAGE_PACKAGES := buildah podman runc
image-deps:
	@if ! command -v dpkg >/dev/null; then echo "image-deps: no dpkg here; install $(IMAGE_PACKAGES) yourself"; exit 0; fi; \
	missing=""; \
	for package in $(IMAGE_PACKAGES); do dpkg -s $$package >/dev/null 2>&1 || missing="$$missing $$package"; done; \
	if [ -n "$$missing" ]; then \
		echo "image-deps: installing$$missing"; \
		$(SUDO) apt-get update && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing; \
	fi

## The container image FROM scratch (the release broker and the libraries it links, no
## registry): contrib/container/build-image.sh, docs/operations.md ("Container image").
image: release image-deps
	contrib/container/build-image.sh --binary .build-release/release/rollcall

## Builds the image from the debug broker in a throwaway store, runs it with podman and checks
## that it serves and stops with 0 (Tests/image/image-check.sh). Not part of `make test`:
## installing the tools and copying the image cost more than make test's budget has left.
test-image: image-deps
	@[ -x .build/debug/rollcall ] || swift build --product rollcall
	Tests/image/image-check.sh

## Build (the integration tests start the real rollcall binary) and check that the bench
## compiles (test-bench-build), then run every test: the Swift suites, the JavaScript client's suite (Node), the operator checks (promtool, systemd-analyze), the server API suite, the fuzz corpus replay,
## the versioned-dependency check of RollcallClient, then the browser demo in headless Chromium.
## `.ci/run` is exactly this.
## The suites run side by side where they wait more than they compute (2 cores on CI): the
## Swift suites in two processes (test-swift) with the server API, operator and fuzz-replay
## checks, then the join-burst suite alone, the JavaScript suite alone (its liveness and
## rate-limit timings failed beside the Swift suites), then the versioned-dependency and bench
## builds (test-builds) beside the browser tests. Each suite's output is printed whole when it
## ends (--output-sync); a failing suite fails `make test`. docs/testing.md, "CI time".
test: build
	swift build --build-tests
	$(MAKE) --no-print-directory $(FUZZ_REPLAYER)
	$(MAKE) --no-print-directory -j5 --output-sync=target $(SWIFT_SHARDS) test-api test-ops test-fuzz-replay
	$(MAKE) --no-print-directory test-swift-alone
	$(MAKE) --no-print-directory test-js
	$(MAKE) --no-print-directory -j2 --output-sync=target test-builds test-browser

## The two compile checks, one after the other: RollcallClient as a versioned dependency, then
## the bench. `make test` runs them beside the browser tests, which wait more than they compute
## and took longer than both (docs/testing.md, "CI time").
test-builds:
	$(MAKE) --no-print-directory test-consumer
	$(MAKE) --no-print-directory test-bench-build

## The bench (Benchmarks/, a package of its own) still compiles against this commit: built into
## the debug build's folder, so only the bench's own targets compile and the root's modules are
## reused (about what `swift build` paid for the bench when it was a target of this package).
## `make release` builds the release bench that `make bench` runs, in Benchmarks/.build.
test-bench-build:
	swift build --package-path Benchmarks --scratch-path .build --product rollcall-bench

## The Swift suites alone (built by `make test` first), in two test processes side by side
## (SWIFT_SHARDS). In one process, Swift concurrency runs test bodies on as many threads as
## the machine has cores, and most of these tests block their thread while they wait on a
## broker, Redis or a deadline: on 2 cores one `swift test` ran two tests at a time and took
## about 176 s while using under 40 % of the CPU (docs/testing.md, "CI time"). Two processes
## run four at a time; four processes (eight) used 90 % of the CPU and failed the SIGSTOP
## outage tests. Every test is in exactly one shard: the first takes RollcallIntegrationTests'
## cluster and chaos suites and everything outside RollcallIntegrationTests, the second the
## other integration suites, and the SWIFT_ALONE suites run by themselves afterwards
## (test-swift-alone): they measure how fast their own loop turns (a burst of 3,000 joins must
## not delay a heartbeat 400 ms), which a machine busy with both shards cannot promise.
## The shards run the test bundle `make test` built, directly, not through `swift test`: two
## `swift test --skip-build --ignore-lock` started together raced for SwiftPM's build database
## ("database is locked"), and the loser ran no test at all ("no tests found").
SWIFT_TEST := .build/debug/RollcallPackageTests.xctest --testing-library swift-testing
SWIFT_SHARD_CLUSTER := RollcallIntegrationTests\.(Cluster|Chaos)
SWIFT_ALONE := RollcallClusterTests\.ClusterBurstTests
SWIFT_SHARDS := test-swift-cluster test-swift-integration
test-swift:
	$(MAKE) --no-print-directory -j2 --output-sync=target $(SWIFT_SHARDS)
	$(MAKE) --no-print-directory test-swift-alone
test-swift-cluster:
	$(SWIFT_TEST) --skip 'RollcallIntegrationTests(?!\.(Cluster|Chaos))' --skip '$(SWIFT_ALONE)'
test-swift-integration:
	$(SWIFT_TEST) --filter RollcallIntegrationTests --skip '$(SWIFT_SHARD_CLUSTER)'
test-swift-alone:
	$(SWIFT_TEST) --filter '$(SWIFT_ALONE)'

## Drive the browser demo (examples/web) in two headless Chromium sessions against the
## real broker, and the operator's console (examples/admin) against a three-node cluster on
## one redis-server; saves screenshots to artifacts/ (demo.png, admin.png).
test-browser: browser-deps
	@[ -x .build/debug/rollcall ] || swift build --product rollcall
	$(PYTHON) -m pytest -q -p no:cacheprovider Tests/browser

## The JavaScript client (@rollcall/client in clients/js, packed with `npm pack` and installed
## offline into a temporary project by Tests/js/support/package.mjs) under Node's own test
## runner against the real broker (Tests/js; Node 20+, no npm registry). Needs only the broker binary.
## Debian's TypeScript compiler (the .d.ts check) and React (the usePresence hook test).
JS_PACKAGES := node-typescript node-react node-react-test-renderer
.PHONY: test-js js-deps
js-deps:
	@if command -v dpkg >/dev/null; then missing=""; \
	for package in $(JS_PACKAGES); do dpkg -s $$package >/dev/null 2>&1 || missing="$$missing $$package"; done; \
	if [ -n "$$missing" ]; then echo "js-deps: installing$$missing"; $(SUDO) apt-get update && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing; fi; fi
test-js: js-deps
	@[ -x .build/debug/rollcall ] || [ -n "$$ROLLCALL_BINARY" ] || swift build --product rollcall
	node --experimental-websocket --test --test-timeout=120000 Tests/js/

## The committed fuzz corpus (Fuzz/corpus) through the fuzz harness and its invariants, with the
## plain debug build: without -DROLLCALL_FUZZ, rollcall-fuzz replays the files it is given.
## A crash or a violated invariant (a precondition) fails; no fuzzer toolchain needed.
## The replayer is rebuilt only when a source it is made of is newer (after `make build` it is
## current: a no-op `swift build` costs 15-20 s on a busy machine).
FUZZ_REPLAYER := .build/debug/rollcall-fuzz
$(FUZZ_REPLAYER): Package.swift $(shell find Fuzz/Sources Sources/RollcallCore Sources/RollcallProtocol -name '*.swift' 2>/dev/null)
	swift build --product rollcall-fuzz
	@touch $@

test-fuzz-replay: $(FUZZ_REPLAYER)
	@count=$$(ls Fuzz/corpus | wc -l); \
	$(FUZZ_REPLAYER) Fuzz/corpus/* && \
	echo "test-fuzz-replay: PASS: $$count corpus inputs replayed, every invariant held"

## RollcallClient as a versioned dependency: Tests/consumer depends on a tagged clone of the
## current commit with .package(url:from:), which SwiftPM refuses if the client's closure has
## unsafe flags (Tests/consumer/consumer-check.sh).
test-consumer:
	Tests/consumer/consumer-check.sh

## RollcallClient where libwebsockets is absent: the package's default trait LibWebSockets off, so
## the client builds with its URLSession transport only (no RollcallConnection, no lws, no libev),
## in its own scratch folder. Not part of `make test` (a build of its own; docs/client.md, "Platforms").
test-client-nolws:
	swift build --disable-default-traits --scratch-path .build-nolws --target RollcallClient
	@echo "test-client-nolws: PASS: RollcallClient builds without libwebsockets (URLSession transport only)"

## libFuzzer over frame decoding and request dispatch (Fuzz/, docs/testing.md) for
## $(FUZZ_SECONDS) seconds. New inputs go to .build-fuzz/corpus (the committed seeds in
## Fuzz/corpus stay untouched); crashes are saved as .build-fuzz/crash-*.
FUZZ_SECONDS ?= 600
FUZZ_FLAGS := -Xswiftc -sanitize=fuzzer -Xswiftc -parse-as-library -Xswiftc -DROLLCALL_FUZZ
fuzz: deps
	swift build -c debug --scratch-path .build-fuzz $(FUZZ_FLAGS) --product rollcall-fuzz
	mkdir -p .build-fuzz/corpus
	.build-fuzz/debug/rollcall-fuzz -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
		-artifact_prefix=.build-fuzz/ .build-fuzz/corpus Fuzz/corpus

## The integration suite under AddressSanitizer: an ASan-built broker (ROLLCALL_BINARY) driven
## by an ASan-built test runner, in its own scratch folder .build-asan.
ASAN_FLAGS := -Xswiftc -sanitize=address
test-asan: deps
	swift build $(ASAN_FLAGS) --scratch-path .build-asan --product rollcall
	ROLLCALL_BINARY=$(CURDIR)/.build-asan/debug/rollcall \
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:halt_on_error=1 \
	swift test $(ASAN_FLAGS) --scratch-path .build-asan --filter RollcallIntegrationTests

## Every Swift suite under ThreadSanitizer: a TSan-built broker (ROLLCALL_BINARY) driven by a
## TSan-built test runner (client library threads included), in .build-tsan. Any report fails.
TSAN_FLAGS := -Xswiftc -sanitize=thread
test-tsan: deps
	swift build $(TSAN_FLAGS) --scratch-path .build-tsan --product rollcall
	ROLLCALL_BINARY=$(CURDIR)/.build-tsan/debug/rollcall TSAN_OPTIONS=halt_on_error=1 \
	swift test $(TSAN_FLAGS) --scratch-path .build-tsan

## The chaos suite (Tests/RollcallIntegrationTests/Chaos, docs/testing.md "Chaos suite"): seeded
## fault schedules over three nodes and a real redis-server with the append-only file (kill -9
## and restart of a node, SIGSTOP of a node, a node's Redis link cut or frozen at a proxy, Redis
## shut down and started again, Redis stopped) while clients churn on every node; healed and
## quiet, the invariants are checked. Runs schedules with fresh seeds for $(CHAOS_SECONDS)
## seconds, printing each seed; `CHAOS_SEED=<seed> make chaos` replays one. CHAOS_FAULTS
## (comma-separated kinds) narrows the faults, CHAOS_WEBHOOKS=0 turns the webhook check off.
## Reports and the summary also go to $(CHAOS_REPORT). (`swift test` runs one short schedule.)
CHAOS_SECONDS ?= 300
## `server` (one redis-server) or `cluster` (a Redis Cluster of 3 masters with a replica each).
CHAOS_REDIS ?= server
CHAOS_REPORT  ?= $(CURDIR)/.build/chaos-report.txt
chaos: build
	swift build --build-tests
	@mkdir -p $(dir $(CHAOS_REPORT))
	CHAOS_SECONDS=$(CHAOS_SECONDS) CHAOS_REPORT=$(CHAOS_REPORT) CHAOS_REDIS=$(CHAOS_REDIS) \
	swift test --skip-build --filter 'ChaosTests/chaosForSeconds'

## Leaks: the release broker under valgrind memcheck while a short soak churns sessions, then
## SIGTERM; fails when anything is definitely or indirectly lost (Tests/leak/leak-check.sh).
leak-check: release
	@missing=""; for tool in valgrind:valgrind objcopy:binutils; do \
		command -v $${tool%%:*} >/dev/null || missing="$$missing $${tool#*:}"; done; \
	if [ -n "$$missing" ]; then \
		$(SUDO) apt-get update && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing; fi
	Tests/leak/leak-check.sh

## Soak: SOAK_SESSIONS sessions with churn for SOAK_SECONDS against a release broker; fails
## when broker RSS grows more than 5% after warm-up (BENCHMARKS.md has a 10,000-session run).
SOAK_SECONDS  ?= 60
SOAK_SESSIONS ?= 2000
soak: release
	$(BENCH) soak --sessions $(SOAK_SESSIONS) --duration $(SOAK_SECONDS) \
		--json .build-release/soak-result.json

## The JavaScript client's soak (Tests/js/soak/soak.mjs; docs/testing.md has a 10-minute run):
## SOAK_JS_CLIENTS clients of @rollcall/client (the packed tarball) through a proxy that cuts and
## freezes links at random for SOAK_JS_SECONDS against the debug broker, then every roster must
## equal the broker's listing and no client may be wrongly online. Seeded: SOAK_SEED replays a
## failure's schedule (the seed is printed). Not part of `make test` (too long).
SOAK_JS_SECONDS ?= 600
SOAK_JS_CLIENTS ?= 200
soak-js: js-deps
	@[ -x .build/debug/rollcall ] || [ -n "$$ROLLCALL_BINARY" ] || swift build --product rollcall
	node --experimental-websocket Tests/js/soak/soak.mjs --seconds $(SOAK_JS_SECONDS) --clients $(SOAK_JS_CLIENTS) \
		$(if $(SOAK_SEED),--seed $(SOAK_SEED)) --json .build/soak-js-result.json

## Release builds of the broker (in .build-release, apart from the debug build) and of the bench,
## a package of its own in Benchmarks/ that depends on this one by path (its build in
## Benchmarks/.build: $(BENCH)).
BENCH := Benchmarks/.build/release/rollcall-bench
release: deps
	swift build -c release --scratch-path .build-release --product rollcall
	swift build -c release --package-path Benchmarks --product rollcall-bench

## The quick version of every rollcall-bench scenario against a release broker (a few minutes
## in all); tables on stdout, JSON and SVG charts in $(BENCH_OUT). BENCHMARKS.md has the full
## runs and the commands that produced them.
BENCH_OUT ?= .build-release/bench
## Install what only the benchmarks need (BENCH_PACKAGES), when missing.
bench-deps:
	@if ! command -v dpkg >/dev/null; then echo "bench-deps: no dpkg here; install $(BENCH_PACKAGES) yourself"; exit 0; fi; \
	missing=""; \
	for package in $(BENCH_PACKAGES); do dpkg -s $$package >/dev/null 2>&1 || missing="$$missing $$package"; done; \
	if [ -n "$$missing" ]; then \
		echo "bench-deps: installing$$missing"; \
		$(SUDO) apt-get update && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing; \
	fi

bench: release bench-deps
	mkdir -p $(BENCH_OUT)
	for scenario in listing fanout mosquitto latency connect idle storm slow-consumers cluster; do \
		$(BENCH) $$scenario --quick --json $(BENCH_OUT)/$$scenario.json --plot $(BENCH_OUT)/$$scenario.svg || exit 1; \
	done
	@echo "bench: results in $(BENCH_OUT)"

clean:
	rm -rf .build .build-fuzz .build-asan .build-tsan .build-release .build-cluster .build-nolws Benchmarks/.build
