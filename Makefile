# Packaging and checks. Cargo builds; this file installs and runs the suite (fd's layout).
PREFIX  ?= /usr
DESTDIR ?=
bindir  ?= $(PREFIX)/bin
sbindir ?= $(PREFIX)/sbin
mandir  ?= $(PREFIX)/share/man
CARGO   ?= cargo

.PHONY: all build test check deps bench

all: build

build:
	$(CARGO) build --release --locked

# The README's test command: installs the Debian packages the tests need (as root), then
# format, lints, the core boundary and the whole test suite.
test: deps check
	$(CARGO) test --locked

deps:
	./.ci/deps

check:
	$(CARGO) fmt --check
	$(CARGO) clippy --locked --all-targets -- -D warnings
	./.ci/core-boundary

# Benchmarks are not tests: criterion lives in its own crate so `cargo test` never builds it.
bench:
	cd benches/criterion && $(CARGO) bench --bench schedule
