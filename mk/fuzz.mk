# SPDX-License-Identifier: GPL-2.0-only
# The libFuzzer targets (docs/fuzzing.md).
# Included at the end of the Makefile: its variables (BUILD, ALL_CFLAGS, DAEMON_OBJS, ...) are
# set by then.

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
