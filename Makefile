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

# The setgid crontab (Debian's model, docs/crontab-security.md): the group `crontab` (created if
# missing), the binary root:crontab 2755, the spool directory root:crontab 1730. Run as root.
spooldir ?= /var/spool/cron/crontabs
crontab_bin ?= target/release/crontab
.PHONY: install-crontab
install-crontab:
	getent group crontab >/dev/null || groupadd --system crontab
	install -D -o root -g crontab -m 2755 $(crontab_bin) $(DESTDIR)$(bindir)/crontab
	install -d -o root -g root -m 0755 $(DESTDIR)$(dir $(spooldir))
	install -d -o root -g crontab -m 1730 $(DESTDIR)$(spooldir)
