# SPDX-License-Identifier: GPL-2.0-only
# make bench (docs/performance.md).
# Included at the end of the Makefile: its variables (BUILD, ALL_CFLAGS, DAEMON_OBJS, ...) are
# set by then.

# `make bench` (root, < 15 min): what rubyprofd costs the hosts it runs on, measured beside a floor
# program (bench/floor.bpf.c) and peers, written to $(BUILD)/bench/results.md, and (the full run)
# to docs/performance.md, the README's table and bench/results/. See bench/method.md.
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
