# SPDX-License-Identifier: GPL-2.0-only
# The tests: fixtures, the unit test binaries and the test targets (docs/testing.md).
# Included at the end of the Makefile: its variables (BUILD, ALL_CFLAGS, DAEMON_OBJS, ...) are
# set by then.

# Fixtures for the ELF unit tests: a shared library with a TLS variable (general-dynamic model, as
# libruby), an executable with its own TLS (a static Ruby's layout), and a stripped copy.
$(BUILD)/fixtures/libtlsfix.so: tests/fixtures/tlsfix.c | $(BUILD)/fixtures
	$(call msg,CC,$@)
	$(Q)$(CC) -O1 -g -fPIC -shared -ftls-model=global-dynamic -Wl,--build-id $< -o $@
$(BUILD)/fixtures/libtlsfix-stripped.so: $(BUILD)/fixtures/libtlsfix.so
	$(call msg,STRIP,$@)
	$(Q)objcopy --strip-all --add-gnu-debuglink=$< $< $@
$(BUILD)/fixtures/exetls: tests/fixtures/exetls.c | $(BUILD)/fixtures
	$(call msg,CC,$@)
	$(Q)$(CC) -O1 -g -pie -fPIE -Wl,--build-id $< -o $@

# Fixtures for the end-to-end tests of unusual Rubies (tests/e2e/test_environments.rb).
# tests/fixtures/fakeruby.c is a fake Ruby 3.1 VM in an executable with its own TLS (a static Ruby);
# -rdynamic exports its globals as Ruby exports them. Variants: one claiming an unknown minor
# version; one with the VM globals hidden (as Ruby 3.3+ has them), its separate debug file, and its
# stripped copy, whose .gnu_debuglink names that file. The names must contain "ruby" (discover.c).
FIXTURE_CFLAGS := -std=gnu11 -Wall -Wextra -Werror -O2 -g -Wl,--build-id
FAKERUBY_FLAGS := $(FIXTURE_CFLAGS) -pie -fPIE -rdynamic
$(BUILD)/fixtures/fakeruby-static: tests/fixtures/fakeruby.c | $(BUILD)/fixtures
	$(call msg,CC,$@)
	$(Q)$(CC) $(FAKERUBY_FLAGS) $< -o $@
$(BUILD)/fixtures/fakeruby-unknown: tests/fixtures/fakeruby.c | $(BUILD)/fixtures
	$(call msg,CC,$@)
	$(Q)$(CC) $(FAKERUBY_FLAGS) -DFAKE_RUBY_VERSION='"3.9.0"' $< -o $@
$(BUILD)/fixtures/fakeruby-hidden: tests/fixtures/fakeruby.c | $(BUILD)/fixtures
	$(call msg,CC,$@)
	$(Q)$(CC) $(FAKERUBY_FLAGS) -DFAKE_HIDDEN $< -o $@
$(BUILD)/fixtures/fakeruby-hidden.debug: $(BUILD)/fixtures/fakeruby-hidden
	$(call msg,OBJCOPY,$@)
	$(Q)objcopy --only-keep-debug $< $@
$(BUILD)/fixtures/fakeruby-stripped: $(BUILD)/fixtures/fakeruby-hidden $(BUILD)/fixtures/fakeruby-hidden.debug
	$(call msg,STRIP,$@)
	$(Q)objcopy --strip-all --add-gnu-debuglink=$(BUILD)/fixtures/fakeruby-hidden.debug $< $@

# The same fake VM run by musl libc (as on Alpine): musl's DTV has 8-byte entries. Built only where
# musl-gcc exists (Debian's musl-tools; make deps installs it); the test skips without it.
$(BUILD)/fixtures/fakeruby-musl: tests/fixtures/fakeruby.c | $(BUILD)/fixtures
	$(call msg,MUSL-CC,$@)
	$(Q)if command -v musl-gcc >/dev/null; then musl-gcc $(FAKERUBY_FLAGS) $< -o $@; fi

# A FUSE server that never answers root (test_hostile's tenant filesystem; libfuse3-dev).
$(BUILD)/fixtures/stallfs: tests/fixtures/stallfs.c | $(BUILD)/fixtures
	$(call msg,CC,$@)
	$(Q)$(CC) $(FIXTURE_CFLAGS) $$(pkg-config --cflags fuse3) $< $$(pkg-config --libs fuse3) -o $@

# A program held stopped at its exec for a while (ptrace), before its loader runs.
$(BUILD)/fixtures/execstop: tests/fixtures/execstop.c | $(BUILD)/fixtures
	$(call msg,CC,$@)
	$(Q)$(CC) $(FIXTURE_CFLAGS) $< -o $@

# A host program that dlopens Debian's libruby (ruby-dev's headers, as system headers: they do not
# build with -Wextra -Werror; linked with -ldl only).
RUBY_PC := ruby-3.1
RUBY_API = $(shell pkg-config --variable=RUBY_API_VERSION $(RUBY_PC))
$(BUILD)/fixtures/dlhost: tests/fixtures/dlhost.c | $(BUILD)/fixtures
	$(call msg,CC,$@)
	$(Q)$(CC) $(FIXTURE_CFLAGS) $$(pkg-config --cflags-only-I $(RUBY_PC) | sed 's/-I/-isystem /g') \
		-DLIBRUBY_SONAME='"libruby-$(RUBY_API).so.$(RUBY_API)"' $< -ldl -o $@

# An object with a cold part and .eh_frame_hdr, stripped, small pages (about 2 KB): test_ehframe's
# and fuzz_native's seed.
$(BUILD)/fixtures/libcoldfix.so: tests/fixtures/coldfix.c | $(BUILD)/fixtures
	$(call msg,CC,$@)
	$(Q)$(CC) $(FIXTURE_CFLAGS) -fPIC -shared -nostdlib -Wl,-Bsymbolic -Wl,-z,noseparate-code \
		-Wl,-z,max-page-size=16 -Wl,-z,norelro $< -o $@.tmp && strip -R .comment $@.tmp && mv $@.tmp $@

FIXTURES := $(BUILD)/fixtures/libtlsfix.so $(BUILD)/fixtures/libtlsfix-stripped.so $(BUILD)/fixtures/exetls \
	$(BUILD)/fixtures/fakeruby-static $(BUILD)/fixtures/fakeruby-unknown \
	$(BUILD)/fixtures/fakeruby-hidden.debug $(BUILD)/fixtures/fakeruby-stripped $(BUILD)/fixtures/dlhost \
	$(BUILD)/fixtures/fakeruby-musl $(BUILD)/fixtures/libcoldfix.so $(BUILD)/fixtures/stallfs \
	$(BUILD)/fixtures/execstop

define UNIT_RULE
$(BUILD)/tests/%: tests/unit/$(1)/%.c $(DAEMON_OBJS) | $(BUILD)/tests
	$$(call msg,CC,$$@)
	$$(Q)$$(CC) $$(ALL_CFLAGS) $$(LDFLAGS) $$< $$(DAEMON_OBJS) $$(LDLIBS) -lcriterion -o $$@
endef
$(foreach d,$(UNIT_DIRS),$(eval $(call UNIT_RULE,$(d))))

test-unit: $(UNIT_BINS) $(FIXTURES)
	$(Q)tests/run-unit.sh $(BUILD) $(UNIT_BINS)

test-e2e: $(BUILD)/rubyprofd $(FIXTURES)
	$(Q)ruby tests/e2e/run.rb $(BUILD)

# make deb, lintian, make install's layout, the unit checked by systemd-analyze, and the package
# installed and purged in a fresh Debian root (root; skipped with the reason otherwise).
test-package:
	$(Q)tests/package/test-deb.sh $(BUILD)

# make deb, then the package under a live systemd: a Debian 12 root booted by systemd-nspawn, the
# .deb installed by apt and run there as an operator does (root; skipped with the reason where
# the root cannot boot). make test runs it.
test-package-live:
	$(Q)tests/package/test-live.sh $(BUILD)

# The same in a booted Debian 13 root (systemd 257; the package built here installed there), and
# the upgrade from an earlier package of this tree in Debian 12 and 13 roots (root; each skipped
# with the reason where its root cannot boot). make test-full and test-rest run them.
test-package-live-trixie:
	$(Q)tests/package/test-live.sh $(BUILD) trixie

test-package-upgrade:
	$(Q)tests/package/test-upgrade.sh $(BUILD) bookworm; a=$$?; \
		tests/package/test-upgrade.sh $(BUILD) trixie && exit $$a

# The long churn (root): thousands of short Rubies, exec'd and forked, against one service with
# the /proc rescan off; `make test` runs a short version. RP_CHURN sets the number per round.
CHURN ?= 1000
churn: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)RP_E2E_RUBIES=host RP_CHURN=$(CHURN) ruby tests/e2e/run.rb $(BUILD) 'service_churn$$'

# The sanitizer build for `make test`: the daemon, the unit tests and their fixtures with
# AddressSanitizer (and LeakSanitizer) + UndefinedBehaviorSanitizer, in a build directory of its own.
ASAN_BUILD := $(BUILD)/asan
ASAN_MAKE = $(MAKE) --no-print-directory BUILD=$(ASAN_BUILD) SANITIZE=address,undefined

# The builds of the tests run as many compilers as there are CPUs.
NPROC := $(shell nproc 2>/dev/null || echo 2)

# Every feature once (tests/run-all.sh --set quick): the unit, collector, view and fuzz-corpus
# tests, every end-to-end test on the host's Ruby, a smoke set on each Debian root and the package
# under a live systemd (root; skipped with the reason otherwise). One summary line.
# RP_DEPS_INSTALLED: make deps ran, so a test skipped for a missing dependency fails
# (tests/run-unit.sh).
test: deps
	$(Q)$(MAKE) --no-print-directory -j$(NPROC) test-build fuzz-build
	$(Q)RP_DEPS_INSTALLED=1 tests/run-all.sh --set quick $(BUILD)

# Everything: make test's suites, every end-to-end test on every Debian root, the package test,
# the fuzz smoke and the sanitizer suites. test-rest is test-full minus what make test ran (CI
# runs make test, then make test-rest).
test-full test-rest: deps
	$(Q)$(MAKE) --no-print-directory -j$(NPROC) test-build fuzz-build
	$(Q)$(ASAN_MAKE) -j$(NPROC) test-build
	$(Q)RP_DEPS_INSTALLED=1 tests/run-all.sh --set $(patsubst test-%,%,$@) $(BUILD) $(ASAN_BUILD)

# Everything the tests run, in $(BUILD).
test-build: all $(UNIT_BINS) $(FIXTURES)
	@:

# Only the sanitizer part of make test-full.
test-asan: deps
	$(Q)$(ASAN_MAKE) -j$(NPROC) test-build
	$(Q)RP_DEPS_INSTALLED=1 RP_ASAN_ONLY=1 tests/run-all.sh --set full $(BUILD) $(ASAN_BUILD)
