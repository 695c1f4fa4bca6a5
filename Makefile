# Packaging and checks. Cargo builds; this file installs and runs the suite (fd's layout).
PREFIX  ?= /usr
DESTDIR ?=
bindir  ?= $(PREFIX)/bin
sbindir ?= $(PREFIX)/sbin
mandir  ?= $(PREFIX)/share/man
CARGO   ?= cargo

.PHONY: all build build-deps test test-i686 check deps bench

all: build

build: build-deps
	$(CARGO) build --release --locked

# What building needs from Debian besides Rust: OpenSSL's headers and pkg-config, for cronctl's
# TLS, and SQLite's, for its history writer (crond itself links neither). Installed when
# missing and we are root; else a hint.
build-deps:
	@{ pkg-config --exists openssl && pkg-config --exists sqlite3; } 2>/dev/null || { \
	    if [ "$$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then \
	        export DEBIAN_FRONTEND=noninteractive; \
	        apt-get install -y -q --no-install-recommends libssl-dev libsqlite3-dev pkg-config \
	        || { apt-get update -q && apt-get install -y -q --no-install-recommends libssl-dev libsqlite3-dev pkg-config; }; \
	    else \
	        echo "building cronctl needs OpenSSL's and SQLite's headers: apt-get install libssl-dev libsqlite3-dev pkg-config" >&2; \
	        exit 1; \
	    fi; }

# The README's test command: installs the Debian packages the tests need (as root), then
# format, lints, the core boundary, that crond links no database code, that no two modules
# import each other, that no function is over 80 lines, and the whole test
# suite: both default workspace members, crond (.) and cronctl (cronctl/).
test: deps check
	$(CARGO) test --locked

deps:
	./.ci/deps

# The unit tests of the processes a job starts (sys::, job::) built for 32-bit x86 and run here,
# as root (they change users): there the system calls that change ids are not the 64-bit
# targets' (sys::as_user's id_calls). Needs the target's standard library and a 32-bit C
# library to link with: `rustup target add i686-unknown-linux-gnu` and `apt-get install
# gcc-multilib`. Without PAM: Debian has no libpam for i386 short of a foreign architecture.
test-i686:
	$(CARGO) test --locked -p crond --target i686-unknown-linux-gnu --no-default-features \
	    --lib -- sys:: job::

check:
	$(CARGO) fmt --check
	$(CARGO) clippy --locked --workspace --all-targets -- -D warnings
	# The fuzz targets are their own crate, outside the workspace: they must build against
	# the library as it is now, not only when `make fuzz` runs.
	$(CARGO) clippy --locked --manifest-path fuzz/Cargo.toml --bins -- -D warnings
	./.ci/core-boundary
	./.ci/core-boundary-selftest
	./.ci/doc-tests-exist
	./.ci/crond-links-no-db
	./.ci/module-cycles
	./.ci/module-cycles-selftest
	./.ci/function-length
	./.ci/function-length-selftest
	./.ci/repo-small

# Benchmarks are not tests: criterion lives in its own crate so `cargo test` never builds it.
bench:
	cd benches/criterion && $(CARGO) bench --bench schedule

# ---- install, uninstall, packages ---------------------------------------------------------
# make install [DESTDIR=/stage] [PREFIX=/usr] [bins=target/release] [SETGID=auto|no]
#   bins:   where the built binaries are (the tests pass target/debug).
#   SETGID: auto (default) makes crontab setgid `crontab` 2755 and the spool dir root:crontab
#           1730 when that is possible: always without DESTDIR (the group is created if
#           missing, which needs root), with DESTDIR only as root when the group exists here.
#           no: crontab 0755 and the spool dir 1730 owned by the installer, for packages, whose
#           scripts set the group (debian/rules and pkg/rpm/crond.spec install this way).
# /etc files are never overwritten; uninstall removes them only when they are unchanged.
sysconfdir ?= /etc
unitdir    ?= $(PREFIX)/lib/systemd/system
spooldir   ?= /var/spool/cron/crontabs
docdir     ?= $(PREFIX)/share/doc/crond
bins       ?= target/release
SETGID     ?= auto
debout     ?= target/deb
debcompress ?=
debflags   ?=
INSTALL    ?= install

etc_files := crontab default/cron pam.d/cron cron.d/.placeholder cron.hourly/.placeholder \
	cron.daily/.placeholder cron.weekly/.placeholder cron.monthly/.placeholder
D := $(DESTDIR)

.PHONY: install uninstall deb

# The binaries of the default `bins` are rebuilt whenever install or deb runs (cargo does nothing
# when they are current): an install after `git pull` must never copy the old ones. Binaries
# given with `bins=DIR` (the tests' target/debug) are taken as they are.
ifeq ($(bins),target/release)
$(bins)/crond $(bins)/crontab $(bins)/cronnext $(bins)/cronctl &: FORCE
	@$(MAKE) --no-print-directory build-deps
	$(CARGO) build --release --locked
else
$(bins)/crond $(bins)/crontab $(bins)/cronnext $(bins)/cronctl &:
	@$(MAKE) --no-print-directory build-deps
	$(CARGO) build --release --locked
endif

.PHONY: FORCE
FORCE:

install: $(bins)/crond $(bins)/crontab $(bins)/cronnext $(bins)/cronctl
	@if [ -e "$(D)$(sbindir)/cron" ] && [ "$$(readlink "$(D)$(sbindir)/cron")" != crond ]; then \
	    echo "install: $(D)$(sbindir)/cron belongs to another cron (Debian's cron or cronie?):" \
	         "remove that package first, or install with another PREFIX" >&2; exit 1; fi
	@if [ -z "$(D)" ] && [ "$$(id -u)" -ne 0 ]; then \
	    echo "install: installing into / needs root (or set DESTDIR)" >&2; exit 1; fi
	$(INSTALL) -d -m 0755 "$(D)$(sbindir)" "$(D)$(bindir)" "$(D)$(unitdir)" \
	    "$(D)$(mandir)/man1" "$(D)$(mandir)/man5" "$(D)$(mandir)/man8"
	$(INSTALL) -m 0755 "$(bins)/crond" "$(D)$(sbindir)/crond"
	ln -sfn crond "$(D)$(sbindir)/cron"
	$(INSTALL) -m 0755 "$(bins)/cronctl" "$(D)$(sbindir)/cronctl"
	# Users run `cronctl list|run|status` too: found on their PATH, as crontab is.
	ln -sfn "$(sbindir)/cronctl" "$(D)$(bindir)/cronctl"
	$(INSTALL) -m 0755 "$(bins)/cronnext" "$(D)$(bindir)/cronnext"
	$(INSTALL) -m 0755 "$(bins)/crontab" "$(D)$(bindir)/crontab"
	$(INSTALL) -m 0644 man/crontab.1 man/cronnext.1 "$(D)$(mandir)/man1/"
	$(INSTALL) -m 0644 man/crontab.5 "$(D)$(mandir)/man5/"
	$(INSTALL) -m 0644 man/crond.8 man/cronctl.8 "$(D)$(mandir)/man8/"
	ln -sfn crond.8 "$(D)$(mandir)/man8/cron.8"
	sed 's#/usr/sbin/cron #$(sbindir)/cron #' systemd/crond.service > "$(D)$(unitdir)/crond.service.tmp"
	chmod 0644 "$(D)$(unitdir)/crond.service.tmp"
	mv -f "$(D)$(unitdir)/crond.service.tmp" "$(D)$(unitdir)/crond.service"
	@for f in $(etc_files); do \
	    dst="$(D)$(sysconfdir)/$$f"; \
	    $(INSTALL) -d -m 0755 "$$(dirname "$$dst")" || exit 1; \
	    if [ -e "$$dst" ] || [ -L "$$dst" ]; then echo "kept $$dst (exists)"; \
	    else echo "$(INSTALL) -m 0644 etc/$$f $$dst"; $(INSTALL) -m 0644 "etc/$$f" "$$dst" || exit 1; fi; \
	done
	$(INSTALL) -d -m 0755 "$(D)$(dir $(spooldir))"
	$(INSTALL) -d -m 1730 "$(D)$(spooldir)"
	@set -e; \
	if [ -z "$(D)" ] && ! getent group crontab >/dev/null; then \
	    echo "groupadd --system crontab"; groupadd --system crontab; fi; \
	if [ "$(SETGID)" = auto ] && [ "$$(id -u)" -eq 0 ] && getent group crontab >/dev/null; then \
	    chown root:crontab "$(D)$(bindir)/crontab" "$(D)$(spooldir)"; \
	    chmod 2755 "$(D)$(bindir)/crontab"; chmod 1730 "$(D)$(spooldir)"; \
	    echo "crontab: root:crontab 2755; $(spooldir): root:crontab 1730"; \
	elif [ -z "$(D)" ]; then \
	    echo "install: could not set the crontab group (SETGID=$(SETGID))" >&2; exit 1; \
	else \
	    echo "DESTDIR install: crontab is 0755 and the spool dir has no group here. A package's postinst must:"; \
	    echo "  getent group crontab || groupadd --system crontab"; \
	    echo "  chown root:crontab $(bindir)/crontab $(spooldir)"; \
	    echo "  chmod 2755 $(bindir)/crontab; chmod 1730 $(spooldir)"; \
	    echo "  systemctl enable crond.service (and start it if systemd runs)"; \
	fi
	@[ -n "$(D)" ] || echo "installed; start it with: systemctl daemon-reload && systemctl enable --now crond"

uninstall:
	rm -f "$(D)$(sbindir)/crond" "$(D)$(bindir)/crontab" "$(D)$(bindir)/cronnext" \
	    "$(D)$(sbindir)/cronctl" "$(D)$(mandir)/man8/cronctl.8" \
	    "$(D)$(mandir)/man1/crontab.1" "$(D)$(mandir)/man1/cronnext.1" \
	    "$(D)$(mandir)/man5/crontab.5" "$(D)$(mandir)/man8/crond.8" "$(D)$(unitdir)/crond.service"
	@for l in "$(D)$(sbindir)/cron:crond" "$(D)$(mandir)/man8/cron.8:crond.8" \
	    "$(D)$(bindir)/cronctl:$(sbindir)/cronctl"; do \
	    p="$${l%:*}"; if [ "$$(readlink "$$p")" = "$${l##*:}" ]; then echo "rm -f $$p"; rm -f "$$p"; fi; \
	done
	@for f in $(etc_files); do \
	    dst="$(D)$(sysconfdir)/$$f"; \
	    if cmp -s "etc/$$f" "$$dst"; then echo "rm -f $$dst"; rm -f "$$dst"; \
	    elif [ -e "$$dst" ]; then echo "kept $$dst (changed)"; fi; \
	done
	@for d in cron.d cron.hourly cron.daily cron.weekly cron.monthly; do \
	    rmdir "$(D)$(sysconfdir)/$$d" 2>/dev/null || true; done
	@rmdir "$(D)$(spooldir)" 2>/dev/null && rmdir "$(D)$(dir $(spooldir))" 2>/dev/null || true
	@if [ -d "$(D)$(spooldir)" ]; then echo "kept $(D)$(spooldir) (users' crontabs)"; fi
	@[ -n "$(D)" ] || echo "the crontab group is kept; if the unit was enabled: systemctl disable crond"

# The Debian packages crond and crond-dbgsym, built by debhelper from debian/ with
# `dpkg-buildpackage -b` into $(debout) (with their .buildinfo and .changes), then checked by
# lintian as the archive does. With the default `bins`, cargo builds the release binaries under
# dpkg-buildpackage (Build-Depends are checked: the Rust toolchain is in debian/control); with
# `bins=DIR`, the binaries there are packaged as they are (the tests pass their debug build).
# debcompress: dpkg-deb's compressor (DPKG_DEB_COMPRESSOR_TYPE; xz when empty; the tests use none).
# debflags: more options for dpkg-buildpackage (-d: build with a toolchain Build-Depends does not
# name, such as rustup's).
debian_version = $(shell dpkg-parsechangelog -S Version)
debian_arch    = $(shell dpkg --print-architecture)
deb_changes    = $(abspath $(debout))/crond_$(debian_version)_$(debian_arch).changes
deb:
	@mkdir -p "$(debout)"
	CROND_DEBOUT="$(abspath $(debout))" $(if $(debcompress),DPKG_DEB_COMPRESSOR_TYPE="$(debcompress)") \
	$(if $(filter target/release,$(bins)),CARGO="$(CARGO)",CROND_BINS="$(abspath $(bins))") \
	    dpkg-buildpackage -us -uc -b $(if $(filter target/release,$(bins)),,-d) $(debflags) \
	    --buildinfo-option=-u"$(abspath $(debout))" --changes-option=-u"$(abspath $(debout))" \
	    --buildinfo-file="$(deb_changes:.changes=.buildinfo)" --changes-file="$(deb_changes)"

# The same packages built in a fresh Debian root with only the Build-Depends installed, as a
# build daemon builds them (debootstrap and Debian's mirror; as root), into $(debout)/clean-root,
# then checked by lintian.
.PHONY: deb-clean-root
deb-clean-root:
	pkg/deb/clean-root-build "$(debout)/clean-root"
	lintian --pedantic --fail-on error,warning "$(debout)"/clean-root/*.changes

# lintian on the packages `make deb` built, as pedantic as the archive's checks get: any error
# or warning fails. The package needs no override: the spool dir whose mode 1730 Debian's cron
# overrides is cron-daemon-common's, not crond's.
.PHONY: lintian
lintian:
	lintian --pedantic --display-info --fail-on error,warning "$(deb_changes)"

# piuparts on the package `make deb` built: installed with its dependencies in a clean root of
# this host's release, removed, installed again and purged, with nothing left behind.
# piuparts_root: a minbase root to copy instead of bootstrapping one (the suite's cached
# target/tmp/debian-RELEASE-clean).
piuparts_mirror ?= http://deb.debian.org/debian
piuparts_root   ?=
.PHONY: piuparts
piuparts:
	piuparts -d "$$(. /etc/os-release && echo "$$VERSION_CODENAME")" -m "$(piuparts_mirror)" \
	    --install-remove-install $(if $(piuparts_root),-e "$(piuparts_root)") \
	    "$(abspath $(debout))/crond_$(debian_version)_$(debian_arch).deb"

# The RPM for Fedora and RHEL (pkg/rpm/crond.spec, cronie's layout) into $(rpmout)/RPMS: a
# tarball of the checkout's files (committed or not, less what git ignores), then rpmbuild.
# With the default `bins`, cargo builds the release binaries with CROND_LAYOUT=cronie under
# rpmbuild; with `bins=DIR`, the binaries there (built with CROND_LAYOUT=cronie) are packaged.
# --nodeps: where rpm is not the system's package manager (Debian), its database knows none
# of the BuildRequires.
rpmout        ?= target/rpm
crond_version  = $(shell sed -n 's/^version = "\(.*\)"$$/\1/p' Cargo.toml | head -n 1)
.PHONY: rpm rpmlint
rpm:
	rm -rf "$(rpmout)" && mkdir -p "$(rpmout)/SOURCES"
	git ls-files -co --exclude-standard | while read -r f; do [ ! -e "$$f" ] || echo "$$f"; done | \
	    tar -czf "$(rpmout)/SOURCES/crond-$(crond_version).tar.gz" \
	    --transform 's,^,crond-$(crond_version)/,' -T -
	rpmbuild -bb --nodeps --define "_topdir $(abspath $(rpmout))" \
	    $(if $(filter target/release,$(bins)),--define "cargo $(CARGO)",--define "crond_bins $(abspath $(bins))") \
	    pkg/rpm/crond.spec

# rpmlint on the spec and the RPMs `make rpm` built: any error fails (the findings that are
# crond's design are filtered in pkg/rpm/crond.rpmlintrc, each with its reason).
rpmlint:
	rpmlint -r pkg/rpm/crond.rpmlintrc pkg/rpm/crond.spec $$(find "$(rpmout)/RPMS" -name '*.rpm')

# ---- fuzzing ------------------------------------------------------------------------------
# CI runs each fuzz target for FUZZ_SECONDS on its corpus in fuzz/corpus (kept in the repo, read
# only: what a run finds goes to fuzz/target/found/TARGET, which git ignores, so a local run never
# leaves thousands of new files to be committed by mistake; copy the few worth keeping by hand).
# cargo-fuzz works on stable with `-s none` (no sanitizer); a crash fails the run and leaves its
# input in fuzz/artifacts/TARGET/, which becomes a unit test.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := crontab expression

.PHONY: fuzz
fuzz:
	command -v cargo-fuzz >/dev/null || $(CARGO) install cargo-fuzz --locked
	cd fuzz && for t in $(FUZZ_TARGETS); do \
		log=$$(mktemp); \
		mkdir -p target/found/$$t; \
		if $(CARGO) fuzz run -s none $$t target/found/$$t corpus/$$t -- -max_total_time=$(FUZZ_SECONDS) \
			>$$log 2>&1; then grep -E '^Done' $$log; rm -f $$log; \
		else tail -n 60 $$log; rm -f $$log; exit 1; fi; \
	done
