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
ALL_CFLAGS := -std=gnu11 $(WARN) $(CFLAGS) -D_GNU_SOURCE -DRUBYPROF_VERSION='"$(VERSION)"' \
	-iquote include -iquote daemon -iquote $(BUILD) -MMD -MP $(EXTRA_CFLAGS)
LDLIBS := -lbpf -lelf -lz
ifneq ($(SANITIZE),)
ALL_CFLAGS += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer
LDFLAGS += -fsanitize=$(SANITIZE)
endif

BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Wall -Werror -Iinclude -I$(BUILD) -Ibpf

# Modules of the daemon. main.o is only linked into the binary; the rest is also linked into tests.
DAEMON_SRCS := $(filter-out daemon/main.c,$(wildcard daemon/*.c))
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

$(BUILD)/rubyprof.skel.h: $(BUILD)/rubyprof.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name rubyprof_bpf > $@

$(BUILD)/daemon/%.o: daemon/%.c $(BUILD)/rubyprof.skel.h | $(BUILD)/daemon
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BUILD)/rubyprofd: $(BUILD)/daemon/main.o $(DAEMON_OBJS)
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

FIXTURES := $(BUILD)/fixtures/libtlsfix.so $(BUILD)/fixtures/libtlsfix-stripped.so $(BUILD)/fixtures/exetls

$(BUILD)/tests/%: tests/unit/%.c $(DAEMON_OBJS) | $(BUILD)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $(LDFLAGS) $< $(DAEMON_OBJS) $(LDLIBS) -lcriterion -o $@

.PHONY: all test test-unit test-e2e deps check format format-check install clean profile bench

test-unit: $(UNIT_BINS) $(FIXTURES)
	$(Q)tests/run-unit.sh $(BUILD) $(UNIT_BINS)

test-e2e: $(BUILD)/rubyprofd
	$(Q)ruby tests/e2e/run.rb $(BUILD)

# Unit tests, then the end-to-end tests (root; skipped with the reason otherwise). One summary line.
test: deps
	$(Q)$(MAKE) --no-print-directory all $(UNIT_BINS) $(FIXTURES)
	$(Q)tests/run-all.sh $(BUILD)

# Installs every build and test dependency from Debian packages; quiet when all are present.
deps:
	$(Q)scripts/deps.sh

# Profiles every Ruby running on this host for 10 s, or the example program when none runs.
profile: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)scripts/profile.sh $(BUILD)/rubyprofd

SRC_FILES := $(wildcard daemon/*.[ch] bpf/*.bpf.[ch] include/*.h tests/unit/*.c tests/fixtures/*.c)

format:
	$(Q)clang-format -i $(SRC_FILES)

format-check:
	$(Q)clang-format --dry-run --Werror $(SRC_FILES)

check: format-check $(BUILD)/rubyprof.skel.h
	$(Q)clang-tidy --quiet $(filter %.c,$(wildcard daemon/*.c)) -- $(filter-out -MMD -MP,$(ALL_CFLAGS))
	$(Q)cppcheck --quiet --error-exitcode=1 --enable=warning,portability --inline-suppr \
		-Iinclude -Idaemon -D__x86_64__ daemon

install: $(BUILD)/rubyprofd
	install -D -m 0755 $(BUILD)/rubyprofd $(DESTDIR)$(prefix)/sbin/rubyprofd

clean:
	rm -rf $(BUILD)

-include $(wildcard $(BUILD)/daemon/*.d $(BUILD)/tests/*.d)
