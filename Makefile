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
# tests/unit/FOLDER/test_NAME.c tests daemon/FOLDER/NAME.c; each is build/tests/test_NAME
UNIT_DIRS := $(patsubst tests/unit/%/,%,$(sort $(dir $(wildcard tests/unit/*/test_*.c))))
UNIT_SRCS := $(wildcard tests/unit/*/test_*.c)
UNIT_BINS := $(addprefix $(BUILD)/tests/,$(basename $(notdir $(UNIT_SRCS))))

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

.PHONY: all test test-full test-rest test-asan test-build test-unit test-e2e test-package test-package-live \
	test-package-live-trixie test-package-upgrade churn deps check format format-check install deb \
	clean profile bench readme-flamegraph

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

SRC_FILES := $(wildcard daemon/*/*.[ch] bpf/*.bpf.[ch] include/*.h tests/unit/*.h tests/unit/*/*.c tests/fixtures/*.c scripts/*.c)

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

# The tests, the bench and the fuzz targets have fragments of their own.
include mk/tests.mk mk/bench.mk mk/fuzz.mk
