# Rollcall — build, run and test. `make run` and `make test` first install the Debian
# packages the build and the tests need (only those missing; the TLS tests run `openssl` and
# `curl`), then build with SwiftPM (debug build, so `make run` and `make test` share one
# build in .build/debug).

PACKAGES := libwebsockets-dev pkg-config libsqlite3-dev libssl-dev openssl curl
BROWSER_PACKAGES := chromium chromium-driver
PYTHON   ?= python3
CONFIG   ?= config.json
SUDO     := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)

.PHONY: deps browser-deps build run test test-browser clean

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

## Install what the real-browser test needs: Debian's Chromium and its driver (only when
## missing), and Selenium + pytest from PyPI (only when they cannot be imported; Debian's
## python3-selenium/python3-pytest when pip refuses, e.g. an externally managed Python).
browser-deps:
	@if ! command -v dpkg >/dev/null; then echo "browser-deps: no dpkg here; install $(BROWSER_PACKAGES) yourself"; else \
	missing=""; \
	for package in $(BROWSER_PACKAGES); do dpkg -s $$package >/dev/null 2>&1 || missing="$$missing $$package"; done; \
	if [ -n "$$missing" ]; then \
		echo "browser-deps: installing$$missing"; \
		$(SUDO) apt-get update && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing; \
	fi; fi
	@$(PYTHON) -c "import selenium, pytest" 2>/dev/null || $(PYTHON) -m pip install --quiet selenium pytest || \
	{ echo "browser-deps: pip could not install (externally managed Python?); trying Debian's python3-selenium python3-pytest"; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3-selenium python3-pytest; }

## Build every target (debug).
build: deps
	swift build

## Build, then run the broker on $(CONFIG).
run: build
	.build/debug/rollcall --config $(CONFIG)

## Build (the integration tests start the real rollcall binary), then run every test:
## the Swift suites, then the browser demo in headless Chromium.
test: build
	swift test
	$(MAKE) test-browser

## Drive the browser demo (examples/web) in two headless Chromium sessions against the
## real broker; saves a screenshot to artifacts/demo.png.
test-browser: browser-deps
	@[ -x .build/debug/rollcall ] || swift build --product rollcall
	$(PYTHON) -m pytest -q -p no:cacheprovider Tests/browser

clean:
	rm -rf .build
