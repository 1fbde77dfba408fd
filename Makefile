# SPDX-License-Identifier: GPL-2.0-only
# rubyprofd build. Out-of-tree: everything lands in $(BUILD). `make V=1` shows full commands.
#
# bpf/vmlinux.h is not committed: it is generated at build time from the running kernel's BTF
# (/sys/kernel/btf/vmlinux, override with VMLINUX_BTF=...). CO-RE relocations make the program
# portable across kernels anyway; only the type definitions come from this machine.

BUILD ?= build
CLANG ?= clang
BPFTOOL ?= bpftool
CC ?= gcc
GO ?= go
VMLINUX_BTF ?= /sys/kernel/btf/vmlinux
prefix ?= /usr/local
DESTDIR ?=
VERSION := 0.1.0

# Install layout (make install). The configuration lives in /etc whatever the prefix: the daemon
# reads /etc/rubyprofd/rubyprofd.conf. Units go where systemd looks for them: /lib/systemd/system
# for prefix=/usr (Debian bookworm's place for packaged units), else under the prefix.
sbindir ?= $(prefix)/sbin
mandir ?= $(prefix)/share/man
sysconfdir ?= /etc
ifeq ($(prefix),/usr)
unitdir ?= /lib/systemd/system
else
unitdir ?= $(prefix)/lib/systemd/system
endif

ARCH := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')

ifeq ($(V),1)
Q :=
msg :=
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

.DELETE_ON_ERROR:
.SUFFIXES:

WARN := -Wall -Wextra -Wformat=2 -Wmissing-prototypes -Wshadow -Wno-unused-parameter -Werror
CFLAGS ?= -O2 -g
ALL_CFLAGS := -std=gnu11 $(WARN) $(CFLAGS) $(CPPFLAGS) -D_GNU_SOURCE -DRUBYPROF_VERSION='"$(VERSION)"' \
	-iquote include -iquote daemon -iquote $(BUILD) -MMD -MP $(EXTRA_CFLAGS)
LDLIBS := -lbpf -lelf -ldw -lz -lcurl -liberty -lstdc++
# A sanitizer build stops at the first report: UBSan would otherwise print and go on.
ifneq ($(SANITIZE),)
ALL_CFLAGS += -fsanitize=$(SANITIZE) -fno-sanitize-recover=all -fno-omit-frame-pointer
LDFLAGS += -fsanitize=$(SANITIZE)
endif

BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Wall -Werror -Iinclude -I$(BUILD) -Ibpf

# Modules of the daemon. main.o is only linked into the binary; the rest is also linked into tests.
DAEMON_SRCS := $(filter-out daemon/cmd/main.c,$(wildcard daemon/*/*.c))
DAEMON_OBJS := $(patsubst daemon/%.c,$(BUILD)/daemon/%.o,$(DAEMON_SRCS))
UNIT_SRCS := $(wildcard tests/unit/*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRCS))

all: $(BUILD)/rubyprofd

$(BUILD)/vmlinux.h: | $(BUILD)
	$(call msg,GEN,$@)
	$(Q)$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c > $@

$(BUILD)/rubyprof.bpf.o: bpf/rubyprof.bpf.c $(wildcard bpf/*.bpf.h) include/rubyprof.h $(BUILD)/vmlinux.h
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

# The skeleton is bpftool's code, not ours: NOLINTBEGIN/END keep clang-tidy's findings in it (the
# analyzer's false "Potential leak" in its create_skeleton) out of `make check`, while our code
# that calls it, and paths through it, are still analyzed.
$(BUILD)/rubyprof.skel.h: $(BUILD)/rubyprof.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q){ echo '/* NOLINTBEGIN */' && $(BPFTOOL) gen skeleton $< name rubyprof_bpf && \
		echo '/* NOLINTEND */'; } > $@

# The wall-clock iterator (--clock wall) is an object of its own: CPU mode loads without it.
$(BUILD)/wall.bpf.o: bpf/wall.bpf.c $(wildcard bpf/*.bpf.h) include/rubyprof.h $(BUILD)/vmlinux.h
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@
$(BUILD)/wall.skel.h: $(BUILD)/wall.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q){ echo '/* NOLINTBEGIN */' && $(BPFTOOL) gen skeleton $< name wall_bpf && \
		echo '/* NOLINTEND */'; } > $@

$(BUILD)/daemon/%.o: daemon/%.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

# A BPF skeleton is a prerequisite only of the objects that include it: an edit of one BPF
# program rebuilds its loader and the link, nothing else. (Generated headers must exist
# before the first compile; -MMD records them after.)
$(BUILD)/daemon/sample/sampler.o $(BUILD)/fuzz/daemon/sample/sampler.o: $(BUILD)/rubyprof.skel.h
$(BUILD)/daemon/profile/wall.o $(BUILD)/fuzz/daemon/profile/wall.o: $(BUILD)/wall.skel.h

# The flame graph page (daemon/view/flamegraph.html, the template of `rubyprofd report --format
# flamegraph`) is compiled into the binary as a byte array (od and sed: no tool beyond coreutils):
# the binary needs no file beside it.
VIEW_TEMPLATES := $(BUILD)/views/flamegraph_html.h
$(BUILD)/views/flamegraph_html.h: daemon/view/flamegraph.html
	$(call msg,EMBED,$@)
	$(Q)mkdir -p $(@D) && { echo '/* Generated from $< by the Makefile: do not edit. */' && \
		echo 'static const unsigned char view_flamegraph_html[] = {' && \
		od -An -v -tx1 $< | sed -e 's/ \([0-9a-f][0-9a-f]\)/0x\1,/g' && echo '};'; } > $@
$(BUILD)/daemon/view/view_flame.o $(BUILD)/fuzz/daemon/view/view_flame.o: $(VIEW_TEMPLATES)

$(BUILD)/rubyprofd: $(BUILD)/daemon/cmd/main.o $(DAEMON_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

$(BUILD) $(BUILD)/daemon $(BUILD)/tests $(BUILD)/fixtures:
	$(Q)mkdir -p $@

# ---- tests --------------------------------------------------------------------------------------

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
	$(BUILD)/fixtures/fakeruby-musl $(BUILD)/fixtures/libcoldfix.so

$(BUILD)/tests/%: tests/unit/%.c $(DAEMON_OBJS) | $(BUILD)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $(LDFLAGS) $< $(DAEMON_OBJS) $(LDLIBS) -lcriterion -o $@

.PHONY: all test test-full test-rest test-asan test-build test-unit test-e2e test-package test-package-live \
	test-package-live-trixie test-package-upgrade churn deps check format format-check install deb \
	clean profile bench readme-flamegraph

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

# Installs every build and test dependency from Debian packages; quiet when all are present.
deps:
	$(Q)scripts/deps.sh

# The README's flame graph (root): examples/workload.rb profiled by --oneshot, its view written by
# rubyprofd report, photographed by headless chromium (Debian's chromium) into docs/.
README_PNG := docs/views-flamegraph.png
readme-flamegraph: all
	$(Q)mkdir -p $(BUILD)/readme
	$(Q)$(BUILD)/rubyprofd --oneshot -o $(BUILD)/readme/workload.pb.gz -- ruby examples/workload.rb 10 >/dev/null
	$(Q)$(BUILD)/rubyprofd report $(BUILD)/readme/workload.pb.gz --title 'rubyprofd: examples/workload.rb' \
		--focus '^<main>$$' -o $(BUILD)/readme/workload.html
	$(call msg,PNG,$(README_PNG))
	$(Q)chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1200,600 \
		--virtual-time-budget=5000 --screenshot=$(abspath $(README_PNG)) \
		file://$(abspath $(BUILD))/readme/workload.html 2>/dev/null

# Profiles every Ruby running on this host for 10 s, or the example program when none runs.
profile: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)scripts/profile.sh $(BUILD)/rubyprofd

SRC_FILES := $(wildcard daemon/*/*.[ch] bpf/*.bpf.[ch] include/*.h tests/unit/*.c tests/fixtures/*.c scripts/*.c)

format:
	$(Q)clang-format -i $(SRC_FILES)

format-check:
	$(Q)clang-format --dry-run --Werror $(SRC_FILES)

check: format-check $(BUILD)/rubyprof.skel.h $(BUILD)/wall.skel.h $(VIEW_TEMPLATES)
	$(Q)clang-tidy --quiet $(filter %.c,$(wildcard daemon/*/*.c)) -- $(filter-out -MMD -MP,$(ALL_CFLAGS))
	$(Q)cppcheck --quiet --error-exitcode=1 --enable=warning,portability --inline-suppr \
		-Iinclude -Idaemon -D__x86_64__ daemon

# The unit is installed with ExecStart and ExecReload naming $(sbindir). An existing configuration file is an
# administrator's: a plain `make install` keeps it (and says so); into a DESTDIR (a package's
# staging tree) the default is always written. The man page is installed when docs/ has it.
MANPAGE := $(wildcard docs/rubyprofd.8)
CONF := $(DESTDIR)$(sysconfdir)/rubyprofd/rubyprofd.conf

install: $(BUILD)/rubyprofd
	install -D -m 0755 $(BUILD)/rubyprofd $(DESTDIR)$(sbindir)/rubyprofd
	install -d -m 0755 $(DESTDIR)$(unitdir)
	sed 's|^\(Exec[A-Za-z]*\)=/usr/sbin/rubyprofd|\1=$(sbindir)/rubyprofd|' systemd/rubyprofd.service \
		> $(DESTDIR)$(unitdir)/rubyprofd.service
	chmod 0644 $(DESTDIR)$(unitdir)/rubyprofd.service
	@if [ -z "$(DESTDIR)" ] && [ -e $(CONF) ]; then \
		echo "install: keeping the existing $(CONF) (the default is systemd/rubyprofd.conf)"; \
	else \
		echo "install -D -m 0644 systemd/rubyprofd.conf $(CONF)"; \
		install -D -m 0644 systemd/rubyprofd.conf $(CONF); \
	fi
ifneq ($(MANPAGE),)
	install -d -m 0755 $(DESTDIR)$(mandir)/man8
	gzip -9n < $(MANPAGE) > $(DESTDIR)$(mandir)/man8/rubyprofd.8.gz
	chmod 0644 $(DESTDIR)$(mandir)/man8/rubyprofd.8.gz
endif

# build/rubyprofd_$(VERSION)-1_amd64.deb, built by Debian's own tools (debian/, debhelper) in a copy
# of the source tree under $(BUILD)/deb: dpkg-buildpackage writes its results into the parent of
# the tree it builds, which must not be the directory holding this checkout.
DEB_VERSION := $(VERSION)-1
DEB_ARCH := $(shell dpkg --print-architecture 2>/dev/null)
DEB := $(BUILD)/rubyprofd_$(DEB_VERSION)_$(DEB_ARCH).deb

deb: | $(BUILD)
	$(Q)v=$$(dpkg-parsechangelog -S Version); [ "$$v" = "$(DEB_VERSION)" ] || \
		{ echo "deb: debian/changelog is at $$v, the Makefile at $(DEB_VERSION): add a changelog entry" >&2; exit 1; }
	$(Q)rm -rf $(BUILD)/deb && mkdir -p $(BUILD)/deb/rubyprofd-$(VERSION)
	$(Q)tar -c --exclude=./$(BUILD) --exclude=./.git . | tar -x -C $(BUILD)/deb/rubyprofd-$(VERSION)
	$(call msg,DEB,$(DEB))
	$(Q)cd $(BUILD)/deb/rubyprofd-$(VERSION) && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL dpkg-buildpackage -us -uc -b > ../build.log 2>&1 || \
		{ tail -n 30 ../build.log >&2; echo "deb: dpkg-buildpackage failed; the log is $(BUILD)/deb/build.log" >&2; exit 1; }
	$(Q)cp $(BUILD)/deb/rubyprofd_$(DEB_VERSION)_$(DEB_ARCH).deb $(DEB)

clean:
	rm -rf $(BUILD)

# The parts of the tree generated from the key table (daemon/cmd/config_keys.c): the table of
# docs/configuration.md, the man page's OPTIONS and systemd/rubyprofd.conf. test_config_doc fails
# while a committed one differs from what `make gen` writes.
$(BUILD)/gendocs: scripts/gendocs.c $(DAEMON_OBJS)
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $(LDFLAGS) $< $(DAEMON_OBJS) $(LDLIBS) -o $@

.PHONY: gen
gen: $(BUILD)/gendocs
	$(Q)$(BUILD)/gendocs .

-include $(wildcard $(BUILD)/daemon/*/*.d $(BUILD)/tests/*.d)

# ---- bench --------------------------------------------------------------------------------------

# `make bench` (root, < 10 min): what rubyprofd costs the hosts it runs on, measured beside a floor
# program (bench/floor.bpf.c) and peers, written to $(BUILD)/bench/results.md. See docs/performance.md.
$(BUILD)/bench:
	$(Q)mkdir -p $@

$(BUILD)/bench/floor.bpf.o: bench/floor.bpf.c bench/floor.h include/rubyprof.h $(BUILD)/vmlinux.h | $(BUILD)/bench
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/bench/floor.skel.h: $(BUILD)/bench/floor.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name floor_bpf > $@

$(BUILD)/bench/bpfbench: bench/bpfbench.c $(BUILD)/bench/floor.skel.h
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -iquote bench -iquote $(BUILD)/bench $(LDFLAGS) $< $(LDLIBS) -o $@

bench:
	$(Q)scripts/deps.sh bench
	$(Q)$(MAKE) --no-print-directory all $(BUILD)/bench/bpfbench
	$(Q)ruby bench/run.rb $(BUILD)

SRC_FILES += $(wildcard bench/*.c bench/*.h)

-include $(wildcard $(BUILD)/bench/*.d)

# ---- fuzzing ------------------------------------------------------------------------------------

# libFuzzer targets (tests/fuzz/fuzz_*.c) for the parsers of untrusted input; see docs/fuzzing.md.
# The daemon's objects are built again with clang and the sanitizers into $(BUILD)/fuzz, coverage
# instrumented (fuzzer-no-link); main.c stays out. `make fuzz` runs each target FUZZ_SECONDS and
# prints executions, edges and CPU time; `make fuzz-smoke` runs each FUZZ_SMOKE_SECONDS.
FUZZ_SECONDS ?= 60
FUZZ_SMOKE_SECONDS ?= 10
FUZZ_SAN := address,undefined
FUZZ_CFLAGS := $(filter-out $(CFLAGS),$(ALL_CFLAGS)) -O1 -g -fno-omit-frame-pointer \
	-fno-sanitize-recover=all -iquote tests/fuzz
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_NAMES := $(patsubst tests/fuzz/fuzz_%.c,%,$(FUZZ_SRCS))
FUZZ_BINS := $(patsubst %,$(BUILD)/fuzz/fuzz_%,$(FUZZ_NAMES))
FUZZ_OBJS := $(patsubst daemon/%.c,$(BUILD)/fuzz/daemon/%.o,$(DAEMON_SRCS))
# Not intermediate: the targets share them, and a rebuild of all costs a minute.
.SECONDARY: $(FUZZ_OBJS)

$(BUILD)/fuzz/daemon $(BUILD)/fuzz/corpus:
	$(Q)mkdir -p $@

$(BUILD)/fuzz/daemon/%.o: daemon/%.c
	$(call msg,FUZZ-CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link,$(FUZZ_SAN) -c $< -o $@

$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_common.h $(FUZZ_OBJS)
	$(call msg,FUZZ-LD,$@)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer,$(FUZZ_SAN) $< $(FUZZ_OBJS) $(LDLIBS) -o $@

# The ELF target also starts from the fixtures (binaries are not committed).
$(BUILD)/fuzz/elf-seeds: $(BUILD)/fixtures/libtlsfix.so $(BUILD)/fixtures/libtlsfix-stripped.so \
		$(BUILD)/fixtures/exetls | $(BUILD)/fuzz/daemon
	$(Q)rm -rf $@ && mkdir -p $@ && cp $^ $@/

# fuzz_native starts from the fixture with a cold part.
$(BUILD)/fuzz/native-seeds: $(BUILD)/fixtures/libcoldfix.so | $(BUILD)/fuzz/daemon
	$(Q)rm -rf $@ && mkdir -p $@ && cp $^ $@/

# fuzz_text checks its SVG with libxml2's parser (the test's, not the daemon's).
$(BUILD)/fuzz/fuzz_text: FUZZ_CFLAGS += $(shell pkg-config --cflags libxml-2.0)
$(BUILD)/fuzz/fuzz_text: LDLIBS += $(shell pkg-config --libs libxml-2.0)

# fuzz_debugfile's object is the stripped fixture; the debug files it is given are the seeds.
$(BUILD)/fuzz/fuzz_debugfile: $(BUILD)/fixtures/libtlsfix-stripped.so

# fuzz_mem's seeds: the Ruby objects of tests/fuzz/fakemem.h for every offsets row (the same as
# the committed tests/fuzz/corpus/mem/, rebuilt here so that they follow offsets.c).
$(BUILD)/fuzz/mkseeds_mem: tests/fuzz/mkseeds_mem.c $(DAEMON_OBJS) | $(BUILD)/fuzz/daemon
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -iquote tests/fuzz $(LDFLAGS) $< $(DAEMON_OBJS) $(LDLIBS) -o $@
$(BUILD)/fuzz/mem-seeds: $(BUILD)/fuzz/mkseeds_mem
	$(Q)rm -rf $@ && mkdir -p $@ && $< $@

.PHONY: fuzz fuzz-smoke fuzz-build
fuzz-build: $(FUZZ_BINS) $(BUILD)/fuzz/elf-seeds $(BUILD)/fuzz/mem-seeds $(BUILD)/fuzz/native-seeds

fuzz: fuzz-build
	$(Q)tests/fuzz/run.sh $(BUILD) $(FUZZ_SECONDS) $(FUZZ_NAMES)

fuzz-smoke: fuzz-build
	$(Q)tests/fuzz/run.sh $(BUILD) $(FUZZ_SMOKE_SECONDS) $(FUZZ_NAMES)

SRC_FILES += $(wildcard tests/fuzz/*.[ch])

-include $(wildcard $(BUILD)/fuzz/daemon/*/*.d $(BUILD)/fuzz/*.d)
