# Rollcall — build, run and test. `make run` and `make test` first install the Debian
# packages the build and the tests need (only those missing; the TLS tests run `openssl` and
# `curl`), then build with SwiftPM (debug build, so `make run` and `make test` share one
# build in .build/debug).

PACKAGES := libwebsockets-dev pkg-config libsqlite3-dev openssl curl
CONFIG   ?= config.json
SUDO     := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)

.PHONY: deps build run test clean

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

## Build every target (debug).
build: deps
	swift build

## Build, then run the broker on $(CONFIG).
run: build
	.build/debug/rollcall --config $(CONFIG)

## Build (the integration tests start the real rollcall binary), then run every test.
test: build
	swift test

clean:
	rm -rf .build
