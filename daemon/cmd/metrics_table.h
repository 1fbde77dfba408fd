/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * metrics_table.h - the one table of rubyprofd's metrics: every counter the daemon keeps, with
 * its name, type, help, labels and where its value lives. The metrics endpoint renders it
 * (metrics_table.c), the --oneshot summary reads its values by id, and docs/metrics.md is
 * generated from it (make gen; tests/unit/cmd/test_metrics_table.c fails when it drifts).
 *
 * FAMILY(NAME, TYPE, WHEN, HELP) starts a family; the VALUE(ID, LABEL_KEY, LABEL_VALUE, EXPR)
 * entries after it are its samples. EXPR reads `S`, a const struct metric_snapshot *. WHEN says
 * when the family exists: ALWAYS, or a mode (NATIVE: stacks = mixed; KERNEL: and kernel_stacks;
 * ALONE: and native_processes; WALL: clock = wall; SHIP: upload_url; ENDPOINT: the service's
 * metrics endpoint). Adding a metric: a FAMILY and its VALUEs here, then `make gen`.
 */
#ifndef RP_METRICS_TABLE_H
#define RP_METRICS_TABLE_H

/* clang-format off */
#define RP_METRICS(FAMILY, VALUE) \
	FAMILY("rubyprofd_samples_total", COUNTER, ALWAYS, "CPU samples taken, by whether the sampled thread belonged to a profiled Ruby, to another process, or to a process outside rubyprofd's pid namespace (not looked at: docs/containers.md).") \
	VALUE(M_SAMPLES_RUBY, "process", "ruby", S->c.sampler.bpf[RP_STAT_RUBY_SAMPLES]) \
	VALUE(M_SAMPLES_OTHER, "process", "other", (S->c.sampler.bpf[RP_STAT_SAMPLES] - S->c.sampler.bpf[RP_STAT_RUBY_SAMPLES] - S->c.sampler.bpf[RP_STAT_STALE_PID] - S->c.sampler.bpf[RP_STAT_OTHER_NS])) \
	VALUE(M_SAMPLES_OUTSIDE_NAMESPACE, "process", "outside_namespace", S->c.sampler.bpf[RP_STAT_OTHER_NS]) \
	FAMILY("rubyprofd_ruby_stacks_total", COUNTER, ALWAYS, "Samples that produced a Ruby stack.") \
	VALUE(M_RUBY_STACKS, NULL, NULL, S->c.sampler.bpf[RP_STAT_RUBY_STACKS]) \
	FAMILY("rubyprofd_samples_without_ruby_context_total", COUNTER, ALWAYS, "Samples of a Ruby process's thread that runs no Ruby (or not the GVL holder).") \
	VALUE(M_SAMPLES_WITHOUT_RUBY_CONTEXT, NULL, NULL, (S->c.sampler.bpf[RP_STAT_NO_EC] + S->c.sampler.bpf[RP_STAT_NOT_GVL])) \
	FAMILY("rubyprofd_failed_reads_total", COUNTER, ALWAYS, "Memory reads that failed, by where.") \
	VALUE(M_FAILED_READS_BPF_STACK, "where", "bpf_stack", S->c.sampler.bpf[RP_STAT_READ_FAILED]) \
	VALUE(M_FAILED_READS_BPF_CONTEXT, "where", "bpf_context", S->c.sampler.bpf[RP_STAT_BAD_EC]) \
	VALUE(M_FAILED_READS_SYMBOLIZE, "where", "symbolize", S->c.stacks.frames_failed) \
	FAMILY("rubyprofd_dropped_samples_total", COUNTER, ALWAYS, "Samples lost, by cause.") \
	VALUE(M_DROPPED_SAMPLES_RING_BUFFER_FULL, "cause", "ring_buffer_full", S->c.sampler.bpf[RP_STAT_RB_DROPPED]) \
	VALUE(M_DROPPED_SAMPLES_INCOMPLETE, "cause", "incomplete", S->c.sampler.incomplete) \
	VALUE(M_DROPPED_SAMPLES_TABLE_FULL, "cause", "table_full", S->c.stacks.agg_dropped) \
	VALUE(M_DROPPED_SAMPLES_NO_MEMORY, "cause", "no_memory", S->c.stacks.dropped_nomem) \
	VALUE(M_DROPPED_SAMPLES_REFUSED, "cause", "refused", S->c.stacks.dropped_error) \
	VALUE(M_DROPPED_SAMPLES_UNKNOWN_PROCESS, "cause", "unknown_process", S->c.stacks.unknown_pid) \
	VALUE(M_DROPPED_SAMPLES_REUSED_PID, "cause", "reused_pid", S->c.sampler.bpf[RP_STAT_STALE_PID]) \
	FAMILY("rubyprofd_truncated_stacks_total", COUNTER, ALWAYS, "Stacks cut at max_frames.") \
	VALUE(M_TRUNCATED_STACKS, NULL, NULL, S->c.sampler.bpf[RP_STAT_TRUNCATED]) \
	FAMILY("rubyprofd_stacks_received_total", COUNTER, ALWAYS, "Complete stacks the daemon read from the ring buffer.") \
	VALUE(M_STACKS_RECEIVED, NULL, NULL, S->c.stacks.stacks) \
	FAMILY("rubyprofd_stacks_marked_total", COUNTER, ALWAYS, "Samples that reached the profile with a mark instead of (or beside) their Ruby frames, by mark.") \
	VALUE(M_STACKS_MARKED_NO_CONTEXT, "mark", "no_ruby_context", S->c.stacks.no_ec) \
	VALUE(M_STACKS_MARKED_FAILED_READ, "mark", "failed_read", S->c.stacks.failed_reads) \
	VALUE(M_STACKS_MARKED_TRUNCATED, "mark", "truncated", S->c.stacks.truncated) \
	VALUE(M_STACKS_MARKED_EMPTY, "mark", "no_ruby_frames", S->c.stacks.empty_stacks) \
	FAMILY("rubyprofd_gc_samples_total", COUNTER, ALWAYS, "Samples of a thread that ran the garbage collector: as taken (bpf), and as they reached the profile (kept).") \
	VALUE(M_GC_SAMPLES_BPF, "stage", "bpf", S->c.sampler.bpf[RP_STAT_GC]) \
	VALUE(M_GC_SAMPLES_KEPT, "stage", "kept", S->c.stacks.gc) \
	FAMILY("rubyprofd_jit_samples_total", COUNTER, ALWAYS, "Samples whose leaf frame is JIT code (YJIT).") \
	VALUE(M_JIT_SAMPLES, NULL, NULL, S->c.stacks.jit_leaf) \
	FAMILY("rubyprofd_stack_frames_total", COUNTER, ALWAYS, "Frames of the Ruby stacks taken in BPF, of those shipped through the ring buffer (the rest were the CPU's previous stack), and of those the daemon gave the previous stack's ids.") \
	VALUE(M_STACK_FRAMES_TAKEN, "part", "taken", S->c.sampler.bpf[RP_STAT_FRAMES]) \
	VALUE(M_STACK_FRAMES_SHIPPED, "part", "shipped", S->c.sampler.bpf[RP_STAT_SHIPPED]) \
	VALUE(M_STACK_FRAMES_REUSED, "part", "reused", S->c.stacks.frames_reused) \
	FAMILY("rubyprofd_native_copies_total", COUNTER, NATIVE, "User stack copies sent by the BPF program (--stacks mixed).") \
	VALUE(M_NATIVE_COPIES, NULL, NULL, S->c.sampler.bpf[RP_STAT_USTACKS]) \
	FAMILY("rubyprofd_native_copies_lost_total", COUNTER, NATIVE, "User stack copies lost: the ring buffer was full.") \
	VALUE(M_NATIVE_COPIES_LOST, NULL, NULL, S->c.sampler.bpf[RP_STAT_USTACK_LOST]) \
	FAMILY("rubyprofd_native_copies_short_total", COUNTER, NATIVE, "User stack copies that ended at an unreadable page.") \
	VALUE(M_NATIVE_COPIES_SHORT, NULL, NULL, S->c.sampler.bpf[RP_STAT_USTACK_SHORT]) \
	FAMILY("rubyprofd_native_copies_kept_total", COUNTER, NATIVE, "User stack copies the daemon kept for their Ruby stack.") \
	VALUE(M_NATIVE_COPIES_KEPT, NULL, NULL, S->c.native.kept) \
	FAMILY("rubyprofd_native_copies_bad_total", COUNTER, NATIVE, "User stack copies whose length did not fit their record (dropped).") \
	VALUE(M_NATIVE_COPIES_BAD, NULL, NULL, S->c.native.bad) \
	FAMILY("rubyprofd_native_unwound_total", COUNTER, NATIVE, "Native stacks unwound.") \
	VALUE(M_NATIVE_UNWOUND, NULL, NULL, S->c.native.unw.unwinds) \
	FAMILY("rubyprofd_native_truncated_total", COUNTER, NATIVE, "Native stacks cut short: unwinding stopped early, or more frames than kept (marked in the stack).") \
	VALUE(M_NATIVE_TRUNCATED, NULL, NULL, S->c.native.truncated) \
	FAMILY("rubyprofd_native_unpaired_total", COUNTER, NATIVE, "Ruby stacks shown without native frames: their copy was missing.") \
	VALUE(M_NATIVE_UNPAIRED, NULL, NULL, S->c.native.unpaired) \
	FAMILY("rubyprofd_native_dwfl_evicted_total", COUNTER, NATIVE, "Per-process unwinding states dropped: at their bound, or to make room in the shared ELF cache (the least recently used first).") \
	VALUE(M_NATIVE_DWFL_EVICTED, NULL, NULL, S->c.native.unw.evicted) \
	FAMILY("rubyprofd_native_unwind_events_total", COUNTER, NATIVE, "Unwinds that stopped early (truncated), read above the copied stack, had no modules to unwind with, and Dwfl states rebuilt for a new mapping.") \
	VALUE(M_NATIVE_UNWIND_STOPPED, "event", "stopped", S->c.native.unw.stopped) \
	VALUE(M_NATIVE_UNWIND_PAST_COPY, "event", "past_copy", S->c.native.unw.past_copy) \
	VALUE(M_NATIVE_UNWIND_NO_MODULES, "event", "no_modules", S->c.native.unw.no_dwfl) \
	VALUE(M_NATIVE_UNWIND_REFRESHED, "event", "refreshed", S->c.native.unw.refreshed) \
	FAMILY("rubyprofd_native_unwinds_over_budget_total", COUNTER, NATIVE, "Native stacks not unwound: their process's unwinding had used its 100 ms of the main loop's CPU time in that second (the samples keep their Ruby frames).") \
	VALUE(M_NATIVE_UNWINDS_OVER_BUDGET, NULL, NULL, S->c.native.unw.over_budget) \
	FAMILY("rubyprofd_native_elf_parsed_total", COUNTER, NATIVE, "ELF objects parsed for unwinding (each once while a process uses it).") \
	VALUE(M_NATIVE_ELF_PARSED, NULL, NULL, S->c.native.unw.elf.misses) \
	FAMILY("rubyprofd_native_elf_shared_total", COUNTER, NATIVE, "Times a process's module used an ELF object parsed already.") \
	VALUE(M_NATIVE_ELF_SHARED, NULL, NULL, S->c.native.unw.elf.hits) \
	FAMILY("rubyprofd_native_elf_freed_total", COUNTER, NATIVE, "ELF objects freed: the last process using them went.") \
	VALUE(M_NATIVE_ELF_FREED, NULL, NULL, S->c.native.unw.elf.freed) \
	FAMILY("rubyprofd_native_elf_refused_total", COUNTER, NATIVE, "ELF files refused for unwinding (their modules unwind without them): the shared cache was at its bound of objects or of bytes, or the file was not ELF or changed while read.") \
	VALUE(M_NATIVE_ELF_REFUSED_OBJECTS, "reason", "objects", S->c.native.unw.elf.full) \
	VALUE(M_NATIVE_ELF_REFUSED_BYTES, "reason", "bytes", S->c.native.unw.elf.full_bytes) \
	VALUE(M_NATIVE_ELF_REFUSED_UNREADABLE, "reason", "unreadable", S->c.native.unw.elf.unreadable) \
	FAMILY("rubyprofd_native_elf_objects", GAUGE, NATIVE, "ELF objects held for unwinding now.") \
	VALUE(M_NATIVE_ELF_OBJECTS, NULL, NULL, S->c.native.unw.elf.objects) \
	FAMILY("rubyprofd_native_elf_objects_peak", GAUGE, NATIVE, "Most ELF objects held for unwinding at once.") \
	VALUE(M_NATIVE_ELF_OBJECTS_PEAK, NULL, NULL, S->c.native.unw.elf.peak) \
	FAMILY("rubyprofd_native_elf_bytes", GAUGE, NATIVE, "Bytes of the ELF images held for unwinding (the parts of the objects and debug files read into memory; bound 24 MiB).") \
	VALUE(M_NATIVE_ELF_BYTES, NULL, NULL, S->c.native.unw.elf.bytes) \
	FAMILY("rubyprofd_kernel_stacks_total", COUNTER, KERNEL, "Kernel stacks put under native frames (kernel_stacks).") \
	VALUE(M_KERNEL_STACKS, NULL, NULL, S->c.stacks.kernel_stacks) \
	FAMILY("rubyprofd_kernel_stacks_taken_total", COUNTER, KERNEL, "Kernel stacks the BPF program sent.") \
	VALUE(M_KERNEL_STACKS_TAKEN, NULL, NULL, S->c.sampler.bpf[RP_STAT_KSTACKS]) \
	FAMILY("rubyprofd_kernel_frames_total", COUNTER, KERNEL, "Kernel frames added under native frames.") \
	VALUE(M_KERNEL_FRAMES, NULL, NULL, S->c.stacks.kernel_frames) \
	FAMILY("rubyprofd_kernel_stacks_lost_total", COUNTER, KERNEL, "Kernel stacks lost: the ring buffer was full, or their sample was.") \
	VALUE(M_KERNEL_STACKS_LOST, NULL, NULL, S->c.sampler.bpf[RP_STAT_KSTACK_LOST] + S->c.stacks.kernel_unpaired) \
	FAMILY("rubyprofd_kernel_frames_unnamed_total", COUNTER, KERNEL, "Kernel frames without a name (no CAP_SYSLOG, or no symbol).") \
	VALUE(M_KERNEL_FRAMES_UNNAMED, NULL, NULL, S->c.stacks.kernel_unsymbolized) \
	FAMILY("rubyprofd_other_samples_total", COUNTER, ALONE, "Native samples of processes that are no Ruby (native_processes).") \
	VALUE(M_OTHER_SAMPLES, NULL, NULL, S->c.stacks.alone) \
	FAMILY("rubyprofd_other_samples_taken_total", COUNTER, ALONE, "Samples of processes that are no Ruby taken by the BPF program (native_processes).") \
	VALUE(M_OTHER_SAMPLES_TAKEN, NULL, NULL, S->c.sampler.bpf[RP_STAT_NATIVE_ALONE]) \
	FAMILY("rubyprofd_other_samples_failed_total", COUNTER, ALONE, "Of those: not unwound (the process was gone, or its modules unreadable).") \
	VALUE(M_OTHER_SAMPLES_FAILED, NULL, NULL, S->c.stacks.alone_failed) \
	FAMILY("rubyprofd_other_samples_dropped_total", COUNTER, ALONE, "Of those: dropped at the bound of such processes kept at once.") \
	VALUE(M_OTHER_SAMPLES_DROPPED, NULL, NULL, S->c.stacks.alone_dropped) \
	FAMILY("rubyprofd_other_processes_total", COUNTER, ALONE, "Processes that are no Ruby kept for their native samples.") \
	VALUE(M_OTHER_PROCESSES, NULL, NULL, S->c.stacks.alone_procs) \
	FAMILY("rubyprofd_wall_runs_total", COUNTER, WALL, "Wall-clock iterator runs that walked a process's thread list.") \
	VALUE(M_WALL_RUNS, NULL, NULL, S->c.wall.bpf[RP_WSTAT_RUNS]) \
	FAMILY("rubyprofd_wall_runs_without_process_total", COUNTER, WALL, "Wall-clock runs for a process the BPF maps did not know, or that had no task (it had ended) or not its main task in rubyprofd's pid namespace.") \
	VALUE(M_WALL_RUNS_NO_ENTRY, "cause", "no_entry", S->c.wall.bpf[RP_WSTAT_NO_PROC]) \
	VALUE(M_WALL_RUNS_NO_TASK, "cause", "no_task", S->c.wall.bpf[RP_WSTAT_NO_TASK]) \
	FAMILY("rubyprofd_wall_sleeps_total", COUNTER, WALL, "Times the daemon slept past the next wall-clock tick (every process was still).") \
	VALUE(M_WALL_SLEEPS, NULL, NULL, S->c.wall.sleeps) \
	FAMILY("rubyprofd_wall_ticks_skipped_total", COUNTER, WALL, "Wall-clock ticks of a process not run: none of its threads was switched in or out since its last run (their visits are added at the next).") \
	VALUE(M_WALL_TICKS_SKIPPED, NULL, NULL, S->c.wall.ticks_skipped) \
	FAMILY("rubyprofd_wall_ticks_slept_total", COUNTER, WALL, "Wall-clock ticks the daemon did not wake up for: every process was still (a switch of one wakes it).") \
	VALUE(M_WALL_TICKS_SLEPT, NULL, NULL, S->c.wall.ticks_slept) \
	FAMILY("rubyprofd_wall_wakeups_lost_total", COUNTER, WALL, "Wake-ups of a daemon sleeping through still ticks that the switch hook could not send (its ring full).") \
	VALUE(M_WALL_WAKEUPS_LOST, NULL, NULL, S->c.wall.bpf[RP_WSTAT_WAKE_LOST]) \
	FAMILY("rubyprofd_wall_skipped_visits_total", COUNTER, WALL, "Thread visits of skipped ticks added by the next run.") \
	VALUE(M_WALL_SKIPPED_VISITS, NULL, NULL, S->c.wall.bpf[RP_WSTAT_SKIPPED]) \
	FAMILY("rubyprofd_wall_threads_sampled_total", COUNTER, WALL, "Ruby threads sampled (wall clock).") \
	VALUE(M_WALL_THREADS_SAMPLED, NULL, NULL, S->c.wall.bpf[RP_WSTAT_THREADS]) \
	FAMILY("rubyprofd_wall_threads_on_cpu_total", COUNTER, WALL, "Wall-clock thread samples the iterator left to the perf samples (time on a CPU).") \
	VALUE(M_WALL_THREADS_ON_CPU, NULL, NULL, S->c.wall.bpf[RP_WSTAT_ON_CPU]) \
	FAMILY("rubyprofd_wall_credit_cut_total", COUNTER, WALL, "Off-CPU time cut at its bound (16 periods) for a thread found on a CPU at every tick it was owed a sample.") \
	VALUE(M_WALL_CREDIT_CUT, NULL, NULL, S->c.wall.bpf[RP_WSTAT_CREDIT_CUT]) \
	FAMILY("rubyprofd_wall_perf_muted_total", COUNTER, WALL, "Perf samples dropped in wall mode: their process's running threads are walked by the iterator (Ruby 2.7) or not sampled.") \
	VALUE(M_WALL_PERF_MUTED, NULL, NULL, S->c.sampler.bpf[RP_STAT_WALL_MUTED]) \
	FAMILY("rubyprofd_wall_stacks_reused_total", COUNTER, WALL, "Wall-clock samples of a thread that had not run since its last walk, given that walk's stack instead of a new one.") \
	VALUE(M_WALL_STACKS_REUSED, NULL, NULL, S->c.wall.reused) \
	FAMILY("rubyprofd_wall_threads_reused_total", COUNTER, WALL, "Threads the BPF program sent as unchanged since its last walk (not walked again).") \
	VALUE(M_WALL_THREADS_REUSED, NULL, NULL, S->c.wall.bpf[RP_WSTAT_REUSED]) \
	FAMILY("rubyprofd_wall_threads_walked_total", COUNTER, WALL, "Threads walked with no remembered entry: first seen, or evicted.") \
	VALUE(M_WALL_THREADS_WALKED, NULL, NULL, S->c.wall.bpf[RP_WSTAT_CACHE_MISS]) \
	FAMILY("rubyprofd_wall_reuse_records_total", COUNTER, WALL, "Records that carried reused visits (a parked thread's visits are summed in BPF and sent together).") \
	VALUE(M_WALL_REUSE_RECORDS, NULL, NULL, S->c.wall.bpf[RP_WSTAT_PEND_SENT]) \
	FAMILY("rubyprofd_wall_quiet_visits_total", COUNTER, WALL, "Visits of a parked thread made without copying its header (its task did not run, the thread list did not change).") \
	VALUE(M_WALL_QUIET_VISITS, NULL, NULL, S->c.wall.bpf[RP_WSTAT_QUIET]) \
	FAMILY("rubyprofd_wall_reuse_flushed_total", COUNTER, WALL, "Reused visits the daemon took from the BPF table itself: before each profile is cut, and those of ended threads.") \
	VALUE(M_WALL_REUSE_FLUSHED, NULL, NULL, S->c.wall.pending_swept) \
	FAMILY("rubyprofd_wall_stack_copies_evicted_total", COUNTER, WALL, "Threads' last stacks evicted at the bound of copies kept (the thread is walked again).") \
	VALUE(M_WALL_STACK_COPIES_EVICTED, NULL, NULL, S->c.wall.copies_evicted) \
	FAMILY("rubyprofd_wall_stack_copies_failed_total", COUNTER, WALL, "Threads' last stacks not copied (no memory): the thread is walked again.") \
	VALUE(M_WALL_STACK_COPIES_FAILED, NULL, NULL, S->c.wall.copies_failed) \
	FAMILY("rubyprofd_wall_swept_total", COUNTER, WALL, "State of ended threads and processes dropped: the daemon's stack copies, and the BPF table's entries.") \
	VALUE(M_WALL_SWEPT_COPIES, "what", "copies", S->c.wall.copies_swept) \
	VALUE(M_WALL_SWEPT_ENTRIES, "what", "entries", S->c.wall.entries_swept) \
	FAMILY("rubyprofd_wall_threads_not_remembered_total", COUNTER, WALL, "Thread visits not remembered for reuse: the BPF table of threads was full.") \
	VALUE(M_WALL_THREADS_NOT_REMEMBERED, NULL, NULL, S->c.wall.bpf[RP_WSTAT_CACHE_FULL]) \
	FAMILY("rubyprofd_wall_cursor_runs_total", COUNTER, WALL, "Iterator runs that continued a process's thread list where the last one stopped (more threads than one run takes).") \
	VALUE(M_WALL_CURSOR_RUNS, NULL, NULL, S->c.wall.bpf[RP_WSTAT_CURSOR]) \
	FAMILY("rubyprofd_wall_iterator_seconds_total", COUNTER, WALL, "Time spent in the wall-clock iterator program.") \
	VALUE(M_WALL_ITERATOR_SECONDS, NULL, NULL, S->c.wall.bpf[RP_WSTAT_RUN_NS] / 1e9) \
	FAMILY("rubyprofd_wall_losses_total", COUNTER, WALL, "Wall-clock samples not taken, by cause.") \
	VALUE(M_WALL_LOSSES_MAX_THREADS, "cause", "max_threads", S->c.wall.bpf[RP_WSTAT_CUT]) \
	VALUE(M_WALL_LOSSES_BAD_LIST_NODE, "cause", "bad_list_node", S->c.wall.bpf[RP_WSTAT_BAD_NODE]) \
	VALUE(M_WALL_LOSSES_READ_FAILED, "cause", "read_failed", S->c.wall.bpf[RP_WSTAT_READ_FAILED]) \
	VALUE(M_WALL_LOSSES_REUSED_STACK_MISSING, "cause", "reused_stack_missing", S->c.wall.reuse_missed) \
	VALUE(M_WALL_LOSSES_PENDING_LOST, "cause", "pending_lost", S->c.wall.pending_lost) \
	VALUE(M_WALL_LOSSES_RUN_FAILED, "cause", "run_failed", S->c.wall.runs_failed) \
	VALUE(M_WALL_LOSSES_REFUSED_VERSION, "cause", "refused_version", S->c.wall.refused_version) \
	VALUE(M_WALL_LOSSES_REFUSED_FULL, "cause", "refused_full", S->c.wall.refused_full) \
	FAMILY("rubyprofd_wall_ticks_late_total", COUNTER, WALL, "Wall-clock ticks that began a whole period late.") \
	VALUE(M_WALL_TICKS_LATE, NULL, NULL, S->c.wall.ticks_late) \
	FAMILY("rubyprofd_wall_state_unknown_total", COUNTER, WALL, "Wall-clock samples of a thread whose state fit no rule.") \
	VALUE(M_WALL_STATE_UNKNOWN, NULL, NULL, S->c.wall.bpf[RP_WSTAT_UNKNOWN]) \
	FAMILY("rubyprofd_ring_buffer_bytes_total", COUNTER, ALWAYS, "Bytes of records read from the ring buffer (its size is 8 MiB: this rate tells how long the daemon may stall before samples are dropped).") \
	VALUE(M_RING_BUFFER_BYTES, NULL, NULL, S->c.sampler.ring_bytes) \
	FAMILY("rubyprofd_bad_records_total", COUNTER, ALWAYS, "Ring-buffer records of an unknown kind.") \
	VALUE(M_BAD_RECORDS, NULL, NULL, S->c.sampler.bad_records) \
	FAMILY("rubyprofd_iseqs_reused_total", COUNTER, ALWAYS, "Cached iseqs found replaced by another object at their address (freed by GC), named again.") \
	VALUE(M_ISEQS_REUSED, NULL, NULL, S->c.stacks.sym.iseq_reused) \
	FAMILY("rubyprofd_frame_cache_resets_total", COUNTER, ALWAYS, "Per-process frame caches dropped at their bound and refilled.") \
	VALUE(M_FRAME_CACHE_RESETS, NULL, NULL, S->c.stacks.cache_resets) \
	FAMILY("rubyprofd_symbolizer_cache_resets_total", COUNTER, ALWAYS, "Per-process symbolizer caches (iseqs, lines, names) dropped at their bound.") \
	VALUE(M_SYMBOLIZER_CACHE_RESETS, NULL, NULL, S->c.stacks.sym.cache_resets) \
	FAMILY("rubyprofd_symbolize_failures_total", COUNTER, ALWAYS, "What the symbolizer could not read: iseqs, C methods' names, 3.4+ owners (the frame was gone), line tables (line 0 given).") \
	VALUE(M_SYMBOLIZE_FAILED_ISEQ, "what", "iseq", S->c.stacks.sym.iseq_failed) \
	VALUE(M_SYMBOLIZE_FAILED_CFUNC, "what", "cfunc", S->c.stacks.sym.cfunc_failed) \
	VALUE(M_SYMBOLIZE_FAILED_OWNER, "what", "owner", S->c.stacks.sym.owner_unknown) \
	VALUE(M_SYMBOLIZE_FAILED_LINE, "what", "line", S->c.stacks.sym.line_failed) \
	FAMILY("rubyprofd_processes_without_pidfd_total", COUNTER, ALWAYS, "Processes profiled without a pidfd (their reads are not checked against pid reuse).") \
	VALUE(M_PROCESSES_WITHOUT_PIDFD, NULL, NULL, S->c.stacks.no_pidfd) \
	FAMILY("rubyprofd_ruby_threads_invalid_total", COUNTER, ALWAYS, "Sampled thread pointers that were not a live Ruby thread (no ruby_thread label).") \
	VALUE(M_RUBY_THREADS_INVALID, NULL, NULL, S->c.stacks.rthread.invalid) \
	FAMILY("rubyprofd_ruby_thread_reads_total", COUNTER, ALWAYS, "Ruby threads read from their process (first seen in an interval; a young unnamed one again, for the name it takes after its start).") \
	VALUE(M_RUBY_THREAD_READS, NULL, NULL, S->c.stacks.rthread.reads) \
	FAMILY("rubyprofd_ruby_thread_names_failed_total", COUNTER, ALWAYS, "Ruby thread names (Thread#name) that could not be read.") \
	VALUE(M_RUBY_THREAD_NAMES_FAILED, NULL, NULL, S->c.stacks.rthread.name_failed) \
	FAMILY("rubyprofd_ruby_thread_cache_resets_total", COUNTER, ALWAYS, "Per-process Ruby thread caches dropped at their bound and refilled.") \
	VALUE(M_RUBY_THREAD_CACHE_RESETS, NULL, NULL, S->c.stacks.rthread.resets) \
	FAMILY("rubyprofd_interval_frames_refused_total", COUNTER, ALWAYS, "Frames refused by a full per-process frame table (until the interval ends).") \
	VALUE(M_INTERVAL_FRAMES_REFUSED, NULL, NULL, S->c.agg.frames_refused) \
	FAMILY("rubyprofd_interval_stacks_dropped_total", COUNTER, ALWAYS, "Samples dropped: the interval's stack table was full.") \
	VALUE(M_INTERVAL_STACKS_DROPPED, NULL, NULL, S->c.agg.dropped_full) \
	FAMILY("rubyprofd_frame_table_resets_total", COUNTER, ALWAYS, "Processes whose frame table was started over at its bound.") \
	VALUE(M_FRAME_TABLE_RESETS, NULL, NULL, S->c.agg.frame_resets) \
	FAMILY("rubyprofd_aggregate_processes", GAUGE, ALWAYS, "Processes held by the aggregate: live, and exited within the interval.") \
	VALUE(M_AGGREGATE_PROCESSES, NULL, NULL, S->c.agg.procs) \
	FAMILY("rubyprofd_aggregate_processes_freed_total", COUNTER, ALWAYS, "Processes freed after they exited (at the end of the interval holding their last samples).") \
	VALUE(M_AGGREGATE_PROCESSES_FREED, NULL, NULL, S->c.agg.procs_freed) \
	FAMILY("rubyprofd_processes_profiled", GAUGE, ALWAYS, "Ruby processes profiled now.") \
	VALUE(M_PROCESSES_PROFILED, NULL, NULL, S->c.tracker.active) \
	FAMILY("rubyprofd_processes_tracked", GAUGE, ALWAYS, "Processes the tracker has an entry for.") \
	VALUE(M_PROCESSES_TRACKED, NULL, NULL, S->c.tracker.entries) \
	FAMILY("rubyprofd_processes_enabled_total", COUNTER, ALWAYS, "Ruby processes profiled, ever.") \
	VALUE(M_PROCESSES_ENABLED, NULL, NULL, S->c.tracker.enabled) \
	FAMILY("rubyprofd_discoveries_total", COUNTER, ALWAYS, "Discovery attempts: a process looked at to find and validate its Ruby.") \
	VALUE(M_DISCOVERIES, NULL, NULL, S->c.tracker.discoveries) \
	FAMILY("rubyprofd_discoveries_deferred_total", COUNTER, ALWAYS, "Discoveries due but put off to the next turn of the main loop: the turn's 50 ms of discovery were used.") \
	VALUE(M_DISCOVERIES_DEFERRED, NULL, NULL, S->c.tracker.deferred) \
	FAMILY("rubyprofd_discoveries_slow_total", COUNTER, ALWAYS, "Discoveries that took more than 100 ms (each process logged once).") \
	VALUE(M_DISCOVERIES_SLOW, NULL, NULL, S->c.tracker.slow_discoveries) \
	FAMILY("rubyprofd_discoveries_loading_total", COUNTER, ALWAYS, "Looks at a process whose dynamic loader had mapped no library yet (exec'd a moment ago, not run since): looked at again, not taken for a program without Ruby.") \
	VALUE(M_DISCOVERIES_LOADING, NULL, NULL, S->c.tracker.loading) \
	FAMILY("rubyprofd_discovery_max_seconds", GAUGE, ALWAYS, "The longest discovery of one process so far.") \
	VALUE(M_DISCOVERY_MAX_SECONDS, NULL, NULL, S->c.tracker.discovery_ns_max / 1e9) \
	FAMILY("rubyprofd_debug_checksums_total", COUNTER, ALWAYS, "CRC32s of debug files named by .gnu_debuglink, computed off the main loop, by outcome.") \
	VALUE(M_DEBUG_CHECKSUMS_COMPUTED, "outcome", "computed", S->c.checksum.computed) \
	VALUE(M_DEBUG_CHECKSUMS_FAILED, "outcome", "failed", S->c.checksum.failed) \
	VALUE(M_DEBUG_CHECKSUMS_CACHED, "outcome", "cached", S->c.checksum.hits) \
	VALUE(M_DEBUG_CHECKSUMS_QUEUE_FULL, "outcome", "queue_full", S->c.checksum.queue_full) \
	FAMILY("rubyprofd_debug_checksum_read_bytes_total", COUNTER, ALWAYS, "Bytes of debug files read for their CRC32.") \
	VALUE(M_DEBUG_CHECKSUM_READ_BYTES, NULL, NULL, S->c.checksum.bytes) \
	FAMILY("rubyprofd_debug_checksums_evicted_total", COUNTER, ALWAYS, "Debug file CRC32s dropped from their cache at its bound (64 files).") \
	VALUE(M_DEBUG_CHECKSUMS_EVICTED, NULL, NULL, S->c.checksum.evicted) \
	FAMILY("rubyprofd_processes_refused_total", COUNTER, ALWAYS, "Processes not profiled, by reason.") \
	VALUE(M_PROCESSES_REFUSED_UNSUPPORTED, "reason", "unsupported", S->c.tracker.refused[TRACKER_REFUSED_UNSUPPORTED]) \
	VALUE(M_PROCESSES_REFUSED_NOT_READY, "reason", "not_ready", S->c.tracker.refused[TRACKER_REFUSED_NOT_READY]) \
	VALUE(M_PROCESSES_REFUSED_NO_ACCESS, "reason", "no_access", S->c.tracker.refused[TRACKER_REFUSED_NO_ACCESS]) \
	VALUE(M_PROCESSES_REFUSED_IGNORED, "reason", "ignored", S->c.tracker.refused[TRACKER_REFUSED_IGNORED]) \
	VALUE(M_PROCESSES_REFUSED_ERROR, "reason", "error", S->c.tracker.refused[TRACKER_REFUSED_ERROR]) \
	VALUE(M_PROCESSES_REFUSED_TABLE_FULL, "reason", "table_full", S->c.tracker.table_full) \
	FAMILY("rubyprofd_refused_objects_total", COUNTER, ALWAYS, "Files or sections of a profiled process's objects not read: past a bound (bounds.h, docs/security.md), by bound.") \
	VALUE(M_REFUSED_OBJECTS_SECTION, "bound", "section", S->c.bounds.refused[BOUND_SECTION]) \
	VALUE(M_REFUSED_OBJECTS_FILE, "bound", "file", S->c.bounds.refused[BOUND_FILE]) \
	VALUE(M_REFUSED_OBJECTS_NAME, "bound", "name", S->c.bounds.refused[BOUND_NAME]) \
	VALUE(M_REFUSED_OBJECTS_OBJECT, "bound", "object", S->c.bounds.refused[BOUND_OBJECT]) \
	VALUE(M_REFUSED_OBJECTS_NOT_REGULAR, "bound", "not_regular", S->c.bounds.refused[BOUND_REGULAR]) \
	VALUE(M_REFUSED_OBJECTS_MAPS, "bound", "maps", S->c.bounds.refused[BOUND_MAPS]) \
	VALUE(M_REFUSED_OBJECTS_SECTIONS, "bound", "sections", S->c.bounds.refused[BOUND_SECTIONS]) \
	VALUE(M_REFUSED_OBJECTS_SERVED_FS, "bound", "served_fs", S->c.bounds.refused[BOUND_SERVED]) \
	VALUE(M_REFUSED_OBJECTS_MOUNTS, "bound", "mounts", S->c.bounds.refused[BOUND_MOUNTS]) \
	VALUE(M_REFUSED_OBJECTS_HELD, "bound", "held", S->c.bounds.refused[BOUND_HELD]) \
	VALUE(M_REFUSED_OBJECTS_RELOCATIONS, "bound", "relocations", S->c.bounds.refused[BOUND_RELOCS]) \
	FAMILY("rubyprofd_refused_objects_logged_total", COUNTER, ALWAYS, "Of the refused objects, those logged (one line per object and bound).") \
	VALUE(M_REFUSED_OBJECTS_LOGGED, NULL, NULL, S->c.bounds.logged) \
	FAMILY("rubyprofd_log_lines_held_total", COUNTER, ALWAYS, "Log lines past their budget of 20 a minute, written at debug level only (-v): about processes found, refused or slow to look at (kind=processes), about refused files (kind=refused_files).") \
	VALUE(M_LOG_LINES_HELD_PROCESSES, "kind", "processes", S->c.tracker.log_held) \
	VALUE(M_LOG_LINES_HELD_REFUSED_FILES, "kind", "refused_files", S->c.bounds.held) \
	FAMILY("rubyprofd_process_contexts_read_total", COUNTER, ALWAYS, "OpenTelemetry process contexts (OTEP 4719) read and decoded: a process's first, and each update (docs/trace-context.md).") \
	VALUE(M_PROCESS_CONTEXTS_READ, NULL, NULL, S->c.procctx.reads) \
	FAMILY("rubyprofd_process_contexts_refused_total", COUNTER, ALWAYS, "OpenTelemetry process contexts not used, by reason: header (no signature, an unknown version), size (payload past its bound), torn (an update in progress at every reading), memory (unreadable), payload (not a Resource), value (an attribute used that is not short clean UTF-8; the rest is used).") \
	VALUE(M_PROCESS_CONTEXTS_REFUSED_HEADER, "reason", "header", S->c.procctx.refused[PROCCTX_REFUSED_HEADER]) \
	VALUE(M_PROCESS_CONTEXTS_REFUSED_SIZE, "reason", "size", S->c.procctx.refused[PROCCTX_REFUSED_SIZE]) \
	VALUE(M_PROCESS_CONTEXTS_REFUSED_TORN, "reason", "torn", S->c.procctx.refused[PROCCTX_REFUSED_TORN]) \
	VALUE(M_PROCESS_CONTEXTS_REFUSED_MEMORY, "reason", "memory", S->c.procctx.refused[PROCCTX_REFUSED_MEMORY]) \
	VALUE(M_PROCESS_CONTEXTS_REFUSED_PAYLOAD, "reason", "payload", S->c.procctx.refused[PROCCTX_REFUSED_PAYLOAD]) \
	VALUE(M_PROCESS_CONTEXTS_REFUSED_VALUE, "reason", "value", S->c.procctx.refused[PROCCTX_REFUSED_VALUE]) \
	FAMILY("rubyprofd_process_context_checks_total", COUNTER, ALWAYS, "Looks for an OpenTelemetry process context that read none: checks of a context's header that found it unchanged (unchanged), reads of /proc/PID/maps to find one (maps_scan: a process's first 8 looks, its 16th, 32nd, then every 64th).") \
	VALUE(M_PROCESS_CONTEXT_CHECKS_UNCHANGED, "check", "unchanged", S->c.procctx.unchanged) \
	VALUE(M_PROCESS_CONTEXT_CHECKS_MAPS_SCAN, "check", "maps_scan", S->c.procctx.maps_scans) \
	FAMILY("rubyprofd_thread_context_processes_total", COUNTER, ALWAYS, "Processes whose OpenTelemetry process context names a thread context (OTEP 4947), by what the look for otel_thread_ctx_v1 found: located (its samples carry the context), not_found (no loaded object exports it, yet: looked for again at updates and a few intervals), refused (the loader's TLS data not understood, or not readable), schema (a schema rubyprofd does not read).") \
	VALUE(M_THREAD_CONTEXT_PROCESSES_LOCATED, "result", "located", S->c.procctx.tctx_located) \
	VALUE(M_THREAD_CONTEXT_PROCESSES_NOT_FOUND, "result", "not_found", S->c.procctx.tctx_not_found) \
	VALUE(M_THREAD_CONTEXT_PROCESSES_REFUSED, "result", "refused", S->c.procctx.tctx_refused) \
	VALUE(M_THREAD_CONTEXT_PROCESSES_SCHEMA, "result", "schema", S->c.procctx.tctx_schema) \
	FAMILY("rubyprofd_thread_contexts_total", COUNTER, ALWAYS, "Samples that carried an OpenTelemetry thread context (a valid record attached to the sampled thread), decoded into trace_id, span_id and attribute labels.") \
	VALUE(M_THREAD_CONTEXTS, NULL, NULL, S->c.stacks.tctx.records) \
	FAMILY("rubyprofd_thread_contexts_bad_total", COUNTER, ALWAYS, "Thread contexts, or parts of them, not used, by reason: invalid (valid byte not 1, or a misaligned pointer: no label), failed (the pointer or the record unreadable: no label), lost (ring buffer full), unpaired (its sample was lost), size (attrs-data-size past the 640-byte record: attributes left out), read (attributes unreadable), entry (an entry past the record's end: the rest left out), key (a key index outside the key map, or a name that is one of rubyprofd's labels), value (not UTF-8 without control characters), many (past 16 attributes).") \
	VALUE(M_THREAD_CONTEXTS_BAD_INVALID, "reason", "invalid", S->c.sampler.bpf[RP_STAT_TCTX_INVALID]) \
	VALUE(M_THREAD_CONTEXTS_BAD_FAILED, "reason", "failed", S->c.sampler.bpf[RP_STAT_TCTX_FAILED]) \
	VALUE(M_THREAD_CONTEXTS_BAD_LOST, "reason", "lost", S->c.sampler.bpf[RP_STAT_TCTX_LOST]) \
	VALUE(M_THREAD_CONTEXTS_BAD_UNPAIRED, "reason", "unpaired", S->c.sampler.tctx_unpaired) \
	VALUE(M_THREAD_CONTEXTS_BAD_SIZE, "reason", "size", S->c.stacks.tctx.bad[THREADCTX_BAD_SIZE]) \
	VALUE(M_THREAD_CONTEXTS_BAD_READ, "reason", "read", S->c.stacks.tctx.bad[THREADCTX_BAD_READ]) \
	VALUE(M_THREAD_CONTEXTS_BAD_ENTRY, "reason", "entry", S->c.stacks.tctx.bad[THREADCTX_BAD_ENTRY]) \
	VALUE(M_THREAD_CONTEXTS_BAD_KEY, "reason", "key", S->c.stacks.tctx.bad[THREADCTX_BAD_KEY]) \
	VALUE(M_THREAD_CONTEXTS_BAD_VALUE, "reason", "value", S->c.stacks.tctx.bad[THREADCTX_BAD_VALUE]) \
	VALUE(M_THREAD_CONTEXTS_BAD_MANY, "reason", "many", S->c.stacks.tctx.bad[THREADCTX_BAD_MANY]) \
	FAMILY("rubyprofd_openat2_unavailable_total", COUNTER, ALWAYS, "Files of profiled processes not opened: openat2 said ENOSYS (a kernel before 5.6, or a seccomp filter), and no other call resolves a path safely inside a process's root (logged once).") \
	VALUE(M_OPENAT2_UNAVAILABLE, NULL, NULL, S->c.bounds.openat2_unavailable) \
	FAMILY("rubyprofd_process_events_total", COUNTER, ALWAYS, "Process life-cycle events from the kernel.") \
	VALUE(M_PROCESS_EVENTS_EXEC, "event", "exec", S->c.tracker.execs) \
	VALUE(M_PROCESS_EVENTS_FORK, "event", "fork", S->c.tracker.forks) \
	VALUE(M_PROCESS_EVENTS_EXIT, "event", "exit", S->c.tracker.exits) \
	FAMILY("rubyprofd_process_events_sent_total", COUNTER, ALWAYS, "Process life-cycle events the BPF programs sent.") \
	VALUE(M_PROCESS_EVENTS_SENT, NULL, NULL, S->c.sampler.bpf[RP_STAT_PROC_EVENTS]) \
	FAMILY("rubyprofd_fork_entries_copied_total", COUNTER, ALWAYS, "Forked children sampled from their first tick with their parent's entry (copied in BPF).") \
	VALUE(M_FORK_ENTRIES_COPIED, NULL, NULL, S->c.sampler.bpf[RP_STAT_FORK_COPIED]) \
	FAMILY("rubyprofd_process_events_lost_total", COUNTER, ALWAYS, "Process events lost (buffer full).") \
	VALUE(M_PROCESS_EVENTS_LOST, NULL, NULL, S->c.sampler.bpf[RP_STAT_EVENTS_LOST]) \
	FAMILY("rubyprofd_pids_reused_total", COUNTER, ALWAYS, "Pids found reused by another process.") \
	VALUE(M_PIDS_REUSED, NULL, NULL, S->c.tracker.reused) \
	FAMILY("rubyprofd_proc_scans_total", COUNTER, ALWAYS, "Scans of /proc.") \
	VALUE(M_PROC_SCANS, NULL, NULL, S->c.tracker.scans) \
	FAMILY("rubyprofd_profiles_written_total", COUNTER, ALWAYS, "Interval profiles written to the spool.") \
	VALUE(M_PROFILES_WRITTEN, NULL, NULL, S->profiles_written) \
	FAMILY("rubyprofd_profile_write_errors_total", COUNTER, ALWAYS, "Interval profiles that could not be written.") \
	VALUE(M_PROFILE_WRITE_ERRORS, NULL, NULL, S->profile_errors) \
	FAMILY("rubyprofd_intervals_total", COUNTER, ALWAYS, "Intervals ended (each writes one profile per service that had samples).") \
	VALUE(M_INTERVALS, NULL, NULL, S->intervals) \
	FAMILY("rubyprofd_spool_writes_total", COUNTER, ALWAYS, "Spool writes, by result (too_big: larger than spool_max_bytes by itself).") \
	VALUE(M_SPOOL_WRITES_OK, "result", "ok", S->spool.written) \
	VALUE(M_SPOOL_WRITES_ERROR, "result", "error", S->spool.write_errors) \
	VALUE(M_SPOOL_WRITES_TOO_BIG, "result", "too_big", S->spool.refused_too_big) \
	FAMILY("rubyprofd_spool_startup_removed_total", COUNTER, ALWAYS, "Files a crashed writer left, removed at startup: temporary files, and half pairs.") \
	VALUE(M_SPOOL_STARTUP_TEMPORARY, "what", "temporary", S->spool.temp_removed) \
	VALUE(M_SPOOL_STARTUP_HALF_PAIRS, "what", "half_pairs", S->spool.orphans_removed) \
	FAMILY("rubyprofd_spool_remove_errors_total", COUNTER, ALWAYS, "Spool files that could not be removed (the entry stays).") \
	VALUE(M_SPOOL_REMOVE_ERRORS, NULL, NULL, S->spool.remove_errors) \
	FAMILY("rubyprofd_spool_not_regular_total", COUNTER, ALWAYS, "Files named as spooled profiles or sidecars that were no regular file at startup (a symbolic link, a FIFO): never followed or read, left alone.") \
	VALUE(M_SPOOL_NOT_REGULAR, NULL, NULL, S->spool.not_regular) \
	FAMILY("rubyprofd_spool_files", GAUGE, ALWAYS, "Profiles in the spool.") \
	VALUE(M_SPOOL_FILES, NULL, NULL, S->spool.files) \
	FAMILY("rubyprofd_spool_bytes", GAUGE, ALWAYS, "Bytes in the spool.") \
	VALUE(M_SPOOL_BYTES, NULL, NULL, S->spool.bytes) \
	FAMILY("rubyprofd_spool_evicted_total", COUNTER, ALWAYS, "Profiles removed from the spool by a bound.") \
	VALUE(M_SPOOL_EVICTED_BYTES, "bound", "bytes", S->spool.evicted_bytes) \
	VALUE(M_SPOOL_EVICTED_AGE, "bound", "age", S->spool.evicted_age) \
	VALUE(M_SPOOL_EVICTED_FILES, "bound", "files", S->spool.evicted_files) \
	FAMILY("rubyprofd_bpf_run_seconds_total", COUNTER, ALWAYS, "Time spent in the sampling BPF program, measured inside it.") \
	VALUE(M_BPF_RUN_SECONDS, NULL, NULL, S->c.sampler.bpf[RP_STAT_RUN_NS] / 1e9) \
	FAMILY("rubyprofd_cpu_seconds_total", COUNTER, ALWAYS, "CPU time of the daemon (user and system).") \
	VALUE(M_CPU_SECONDS, NULL, NULL, S->cpu_seconds) \
	FAMILY("rubyprofd_resident_memory_bytes", GAUGE, ALWAYS, "Resident memory of the daemon.") \
	VALUE(M_RESIDENT_MEMORY_BYTES, NULL, NULL, S->rss_bytes) \
	FAMILY("rubyprofd_interned_frames", GAUGE, ALWAYS, "Frames interned for the live processes.") \
	VALUE(M_INTERNED_FRAMES, NULL, NULL, S->c.agg.interned_frames) \
	FAMILY("rubyprofd_interned_bytes", GAUGE, ALWAYS, "Bytes of the interned frames' strings, every process.") \
	VALUE(M_INTERNED_BYTES, NULL, NULL, S->c.agg.interned_bytes) \
	FAMILY("rubyprofd_interval_stacks", GAUGE, ALWAYS, "Distinct stacks in the current interval.") \
	VALUE(M_INTERVAL_STACKS, NULL, NULL, S->c.agg.stacks) \
	FAMILY("rubyprofd_frequency_hertz", GAUGE, ALWAYS, "Sampling frequency per CPU.") \
	VALUE(M_FREQUENCY_HERTZ, NULL, NULL, S->frequency) \
	FAMILY("rubyprofd_config_reloads_total", COUNTER, ALWAYS, "Configuration reloads (SIGHUP).") \
	VALUE(M_CONFIG_RELOADS, NULL, NULL, S->reloads) \
	FAMILY("rubyprofd_config_reload_errors_total", COUNTER, ALWAYS, "Reloads refused: the file had an error (the running configuration was kept).") \
	VALUE(M_CONFIG_RELOAD_ERRORS, NULL, NULL, S->reload_errors) \
	FAMILY("rubyprofd_metrics_clients_accepted_total", COUNTER, ENDPOINT, "Connections to the metrics endpoint.") \
	VALUE(M_METRICS_CLIENTS_ACCEPTED, NULL, NULL, S->endpoint.accepted) \
	FAMILY("rubyprofd_metrics_clients_evicted_total", COUNTER, ENDPOINT, "Connections closed to serve a new one when every slot was taken (the one open longest without a whole request first).") \
	VALUE(M_METRICS_CLIENTS_EVICTED, NULL, NULL, S->endpoint.evicted) \
	FAMILY("rubyprofd_metrics_clients_timed_out_total", COUNTER, ENDPOINT, "Connections closed at their deadline: the request not whole in time after the accept, or the response not taken in time.") \
	VALUE(M_METRICS_CLIENTS_TIMED_OUT, NULL, NULL, S->endpoint.timed_out) \
	FAMILY("rubyprofd_metrics_clients_aborted_total", COUNTER, ENDPOINT, "Connections the peer closed before sending a whole request.") \
	VALUE(M_METRICS_CLIENTS_ABORTED, NULL, NULL, S->endpoint.aborted) \
	FAMILY("rubyprofd_metrics_accept_errors_total", COUNTER, ENDPOINT, "Failed accepts on the metrics endpoint (e.g. out of file descriptors).") \
	VALUE(M_METRICS_ACCEPT_ERRORS, NULL, NULL, S->endpoint.accept_errors) \
	FAMILY("rubyprofd_metrics_clients", GAUGE, ENDPOINT, "Connections to the metrics endpoint open now.") \
	VALUE(M_METRICS_CLIENTS, NULL, NULL, S->endpoint.clients) \
	FAMILY("rubyprofd_metrics_responses_total", COUNTER, ENDPOINT, "Responses of the metrics endpoint by HTTP status.") \
	VALUE(M_METRICS_RESPONSES_200, "code", "200", S->endpoint.responses[METRICS_CODE_200]) \
	VALUE(M_METRICS_RESPONSES_400, "code", "400", S->endpoint.responses[METRICS_CODE_400]) \
	VALUE(M_METRICS_RESPONSES_404, "code", "404", S->endpoint.responses[METRICS_CODE_404]) \
	VALUE(M_METRICS_RESPONSES_405, "code", "405", S->endpoint.responses[METRICS_CODE_405]) \
	VALUE(M_METRICS_RESPONSES_431, "code", "431", S->endpoint.responses[METRICS_CODE_431]) \
	VALUE(M_METRICS_RESPONSES_500, "code", "500", S->endpoint.responses[METRICS_CODE_500]) \
	FAMILY("rubyprofd_upload_ok_total", COUNTER, SHIP, "Profiles the collector accepted (2xx).") \
	VALUE(M_UPLOAD_OK, NULL, NULL, S->ship.uploads_ok) \
	FAMILY("rubyprofd_upload_failures_total", COUNTER, SHIP, "Uploads that failed, by cause (network, timeout and tls had no HTTP answer).") \
	VALUE(M_UPLOAD_FAILURES_NETWORK, "cause", "network", S->ship.failures[SHIP_FAIL_NETWORK]) \
	VALUE(M_UPLOAD_FAILURES_TIMEOUT, "cause", "timeout", S->ship.failures[SHIP_FAIL_TIMEOUT]) \
	VALUE(M_UPLOAD_FAILURES_TLS, "cause", "tls", S->ship.failures[SHIP_FAIL_TLS]) \
	VALUE(M_UPLOAD_FAILURES_HTTP_429, "cause", "http_429", S->ship.failures[SHIP_FAIL_HTTP_429]) \
	VALUE(M_UPLOAD_FAILURES_HTTP_5XX, "cause", "http_5xx", S->ship.failures[SHIP_FAIL_HTTP_5XX]) \
	VALUE(M_UPLOAD_FAILURES_AUTH, "cause", "auth", S->ship.failures[SHIP_FAIL_AUTH]) \
	VALUE(M_UPLOAD_FAILURES_ENDPOINT, "cause", "endpoint", S->ship.failures[SHIP_FAIL_ENDPOINT]) \
	VALUE(M_UPLOAD_FAILURES_REJECTED, "cause", "rejected", S->ship.failures[SHIP_FAIL_REJECTED]) \
	VALUE(M_UPLOAD_FAILURES_PROTOCOL, "cause", "protocol", S->ship.failures[SHIP_FAIL_PROTOCOL]) \
	FAMILY("rubyprofd_upload_bytes_total", COUNTER, SHIP, "Request bytes of accepted uploads.") \
	VALUE(M_UPLOAD_BYTES, NULL, NULL, S->ship.bytes_sent) \
	FAMILY("rubyprofd_upload_resends_total", COUNTER, SHIP, "Profiles sent again after a stop or crash cut their upload off.") \
	VALUE(M_UPLOAD_RESENDS, NULL, NULL, S->ship.resends) \
	FAMILY("rubyprofd_upload_dropped_too_old_total", COUNTER, SHIP, "Profiles dropped unsent: older than upload_max_age.") \
	VALUE(M_UPLOAD_DROPPED_TOO_OLD, NULL, NULL, S->ship.dropped_too_old) \
	FAMILY("rubyprofd_upload_moved_aside_total", COUNTER, SHIP, "Profiles the collector refused, moved into SPOOL_DIR/rejected.") \
	VALUE(M_UPLOAD_MOVED_ASIDE, NULL, NULL, S->ship.rejected_moved) \
	FAMILY("rubyprofd_upload_rejected_removed_total", COUNTER, SHIP, "Refused profiles removed from SPOOL_DIR/rejected by its bounds.") \
	VALUE(M_UPLOAD_REJECTED_REMOVED, NULL, NULL, S->ship.rejected_removed) \
	FAMILY("rubyprofd_upload_move_errors_total", COUNTER, SHIP, "Refused profiles that could not be moved aside (removed instead).") \
	VALUE(M_UPLOAD_MOVE_ERRORS, NULL, NULL, S->ship.move_errors) \
	FAMILY("rubyprofd_upload_not_regular_total", COUNTER, SHIP, "Spooled profiles with a file that is no regular file (a symbolic link, a FIFO): never followed or sent, removed from the spool.") \
	VALUE(M_UPLOAD_NOT_REGULAR, NULL, NULL, S->ship.not_regular) \
	FAMILY("rubyprofd_upload_request_seconds_total", COUNTER, SHIP, "Time spent in requests that got an HTTP answer.") \
	VALUE(M_UPLOAD_REQUEST_SECONDS, NULL, NULL, S->ship.latency_sum) \
	FAMILY("rubyprofd_upload_requests_answered_total", COUNTER, SHIP, "Requests that got an HTTP answer (the count for the time above).") \
	VALUE(M_UPLOAD_REQUESTS_ANSWERED, NULL, NULL, S->ship.latency_count) \
	FAMILY("rubyprofd_spool_backlog_profiles", GAUGE, SHIP, "Profiles waiting in the spool to be sent.") \
	VALUE(M_SPOOL_BACKLOG_PROFILES, NULL, NULL, S->ship.backlog_profiles) \
	FAMILY("rubyprofd_spool_backlog_bytes", GAUGE, SHIP, "Bytes waiting in the spool to be sent.") \
	VALUE(M_SPOOL_BACKLOG_BYTES, NULL, NULL, S->ship.backlog_bytes) \
	FAMILY("rubyprofd_spool_oldest_profile_age_seconds", GAUGE, SHIP, "Age of the oldest profile waiting to be sent (0: none).") \
	VALUE(M_SPOOL_OLDEST_PROFILE_AGE_SECONDS, NULL, NULL, S->ship.oldest_age) \
	FAMILY("rubyprofd_collector_up", GAUGE, SHIP, "1 when the last upload was accepted, else 0.") \
	VALUE(M_COLLECTOR_UP, NULL, NULL, S->ship.state == SHIP_STATE_UP ? 1 : 0) \
	FAMILY("rubyprofd_upload_last_success_timestamp_seconds", GAUGE, SHIP, "When the collector last accepted a profile (0: never).") \
	VALUE(M_UPLOAD_LAST_SUCCESS_TIMESTAMP_SECONDS, NULL, NULL, S->ship.last_success_ns / 1e9)

/* clang-format on */

#include <stdint.h>
#include <stdio.h>

#include "cmd/metrics.h"
#include "output/ship.h"
#include "output/spool.h"
#include "profile/session.h"

/* Every counter, at one moment: what the table's expressions read. */
struct metric_snapshot {
	struct session_counters c;
	struct spool_stats spool;
	struct ship_stats ship;
	struct metrics_stats endpoint;
	double cpu_seconds; /* the daemon's, user and system */
	uint64_t rss_bytes;
	uint64_t profiles_written, profile_errors, intervals, reloads, reload_errors;
	double frequency;
	unsigned int modes; /* METRIC_*: which families exist */
};

enum {
	METRIC_ALWAYS = 1 << 0,
	METRIC_NATIVE = 1 << 1,
	METRIC_KERNEL = 1 << 2,
	METRIC_ALONE = 1 << 3,
	METRIC_WALL = 1 << 4,
	METRIC_SHIP = 1 << 5,
	METRIC_ENDPOINT = 1 << 6,
};

#define RP_METRIC_NO_FAMILY(name, type, when, help)
#define RP_METRIC_ID(id, key, value, expr) id,
enum metric_id { RP_METRICS(RP_METRIC_NO_FAMILY, RP_METRIC_ID) M_COUNT };

/* A sample's value now. */
double metrics_table_value(const struct metric_snapshot *S, enum metric_id id);
/* The label value of a sample (NULL for one without labels). */
const char *metrics_table_label_value(enum metric_id id);
/* The families that exist in S->modes, as Prometheus text. */
void metrics_table_render(const struct metric_snapshot *S, struct metrics_buf *b);
/* docs/metrics.md's table. */
void metrics_table_doc(FILE *out);

#endif
