# SPDX-License-Identifier: GPL-2.0-only
# The OpenTelemetry thread context (OTEP 4947, followed at commit
# 009fafa5e9f252f098697d929cc7faa84dcc5ff7 of opentelemetry-specification): a writer of the
# tests' own (tests/e2e/cext/otelctx.c, written from the OTEP alone, sharing no code with the
# profiler's reader) publishes a process context (OTEP 4719) and switches records while an app
# (scripts/threadctx_app.rb) handles requests on threads and on plain fibers. Each request runs in
# a method of its own, req_<trace_id>, so a sample's stack says which request it was taken in,
# and the app's facts say that request's trace_id, span_id, route and thread.
#
# test_threadctx_writer checks the writer itself, without the reader: gdb (libthread_db) finds
# each thread's otel_thread_ctx_v1 in the three TLS models the OTEP lists, the record there is the
# OTEP's layout, the symbol is in .dynsym with the model's relocation, and the process context's
# header and payload are OTEP 4719's.
#
# The reader's tests (threadctx_*) judge the profiler (daemon/proc/threadctx.c and the BPF read in
# bpf/walk.bpf.h), by the app's own facts.
class E2E

  # The attribute label: docs/trace-context.md writes label names as collectors take them, a `.`
  # becoming `_`: the key map's `http.route` is the sample label `http_route`.
  ROUTE_LABEL = "http_route"
  CTX_LABELS = ["trace_id", "span_id", ROUTE_LABEL, "http_method"].freeze

  OTELCTX_MODELS = {
    "tlsdesc" => [["-mtls-dialect=gnu2", "-DOTELCTX_TLSDESC"], "R_X86_64_TLSDESC"],
    "general-dynamic" => [[], "R_X86_64_DTPMOD64"],
    "initial-exec" => [["-DOTELCTX_INITIAL_EXEC"], "R_X86_64_TPOFF64"],
  }.freeze

  # tests/e2e/cext/otelctx.c built for this Ruby in one TLS model (build_cext, as cbext_so).
  def otelctx_so(model)
    so = File.join(@rt.workdir, "otelctx-#{model}", "otelctx.so")
    File.exist?(so) ? so : build_cext("otelctx.c", so, OTELCTX_MODELS.fetch(model)[0], " (#{model})")
  end

  # Decodes a record as the OTEP lays it out: trace-id[16], span-id[8], valid, trace-flags,
  # attrs-data-size u16, then (key u8, length u8, value) entries.
  def decode_record(bytes)
    trace, span, valid, flags, size = bytes.unpack("a16a8CCS<")
    attrs = {}
    data = bytes.byteslice(28, size) || "".b
    i = 0
    while i + 2 <= data.bytesize
      k, n = data.byteslice(i, 2).unpack("CC")
      break if i + 2 + n > data.bytesize
      attrs[k] = data.byteslice(i + 2, n).force_encoding("UTF-8")
      i += 2 + n
    end
    [trace.unpack1("H*"), span.unpack1("H*"), valid, flags, size, attrs]
  end

  def read_mem(pid, addr, len)
    File.open("/proc/#{pid}/mem", "rb") { |f| f.seek(addr) && f.read(len) }
  end

  host_only :test_threadctx_writer
  def test_threadctx_writer
    gdb = ENV["PATH"].split(":").map { |d| File.join(d, "gdb") }.find { |f| File.executable?(f) }
    check(gdb, "gdb is needed to check the writer from outside (apt-get install gdb)")
    OTELCTX_MODELS.map do |model, (_, reloc)|
      so = otelctx_so(model)
      syms = `readelf --dyn-syms -W #{so}`
      check(syms =~ /\bTLS\s+GLOBAL\s+DEFAULT\s+\d+\s+otel_thread_ctx_v1$/, "#{model}: otel_thread_ctx_v1 is no exported TLS symbol:\n#{syms}")
      relocs = `readelf -r -W #{so}`.lines.grep(/otel_thread_ctx_v1/)
      check(relocs.any? { |l| l.include?(reloc) }, "#{model}: no #{reloc} for otel_thread_ctx_v1:\n#{relocs.join}")
      f = start("threadctx_writer.rb", so)
      pid = f["pid"]
      check(f["tls_model"] == model, "built as #{model}, says #{f["tls_model"]}")
      out, = Open3.capture2e(gdb, "-p", pid.to_s, "-batch", "-ex",
                             "thread apply all print/x *(unsigned long *)&otel_thread_ctx_v1")
      # "Thread 2 (Thread 0x... (LWP n) "w1"):" then "$1 = 0x..."
      by_name = out.scan(/^Thread \d+ \(Thread 0x\h+ \(LWP \d+\) "([^"]*)"\):\n\$\d+ = (0x\h+)/).to_h { |n, v| [n, Integer(v)] }
      found = f["addr"].to_h { |who, _| [who, by_name[who == "main" ? "ruby" : who]] }
      check(found == f["addr"], "#{model}: gdb finds otel_thread_ctx_v1 = #{found.inspect}, the writer attached #{f["addr"].inspect}\n#{out}")
      f["want"].each do |who, (trace, span, attrs)|
        got = decode_record(read_mem(pid, f["addr"][who], 640))
        want = [trace, span, 1, 1, attrs.sum { |_, v| 2 + v.bytesize }, attrs]
        check(got == want, "#{model} #{who}: record #{got.inspect}, wrote #{want.inspect}")
      end
      # the process context: the memfd, its header, the payload at the header's pointer
      maps = File.read("/proc/#{pid}/maps").lines.grep(%r{/memfd:OTEL_CTX})
      check(maps.size == 1, "#{model}: OTEL_CTX mappings: #{maps.inspect}")
      start_addr = Integer(maps[0][/\A\h+/], 16)
      check(start_addr == f["map"], "OTEL_CTX at #{start_addr.to_s(16)}, published at #{f["map"].to_s(16)}")
      sig, version, size, at, ptr = read_mem(pid, start_addr, 32).unpack("a8L<L<Q<Q<")
      check(sig == "OTEL_CTX" && version == 2 && size == f["payload"].bytesize && at.positive? && ptr == start_addr + 32,
            "#{model}: header #{[sig, version, size, at, ptr].inspect}")
      check(read_mem(pid, ptr, size) == f["payload"], "#{model}: payload differs")
      stop_all
      "#{model} (#{reloc}): 2 threads' records found by gdb and read back"
    end.join("; ")
  end

  # The reader's tests, judged by the app's own facts. kind: threads or fibers; work: cpu or wall.
  READER_TESTS = {
    threadctx_threads_cpu: ["threads", "cpu", "tlsdesc"],
    threadctx_fibers_cpu: ["fibers", "cpu", "tlsdesc"],
    threadctx_threads_wall: ["threads", "wall", "general-dynamic"],
    threadctx_fibers_wall: ["fibers", "wall", "initial-exec"],
    threadctx_scheduler_cpu: ["scheduler", "cpu", "general-dynamic"],
    threadctx_scheduler_wall: ["scheduler", "wall", "tlsdesc"],
  }.freeze

  def threadctx_run(kind, work, model, publish: "yes", service: "ctx-shop", duration: 5)
    so = otelctx_so(model)
    flags = work == "wall" ? ["--clock", "wall", "--frequency", WALL_HZ.to_s] : []
    wall_supported! if work == "wall"
    r = profile_script("threadctx_app.rb", so, publish, service, kind, work, duration: duration, flags: flags) { |f| go(f) }
    base = r.facts.fetch("go").delete_suffix(".go")
    # the app's last snapshot of its requests, taken after the stop (so after the profile's
    # end), however long a busy machine makes it wait for the GVL
    FileUtils.touch(base + ".stop")
    facts = nil
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 30
    until (facts = (Marshal.load(File.binread(base + ".requests")) rescue nil)) && facts["final"]
      fail!("no final snapshot of the app's requests within 30 s") if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
      sleep 0.1
    end
    [r, facts]
  end

  # Classifies each sample of the run by the request its stack is in.
  def threadctx_judge(r, facts)
    reqs = facts["requests"].to_h { |q| [q["trace"], q] }
    prev = facts["prev"]
    n = Hash.new(0)
    bad = []
    r.samples.each do |s|
      frames = r.prof.frames(s)
      thread = s.labels["ruby_thread_name"]
      got = s.labels["trace_id"]
      owner = got && reqs[got]
      # (a sample whose Ruby thread's name was not read has no thread to compare: the stack
      # below still judges its trace)
      if owner && thread && owner["thread"] != thread
        n[:foreign] += s.count
        bad << "#{thread} carries #{owner["thread"]}'s #{got}" if bad.size < 5
      end
      t = frames.lazy.map { |l| l.name[/\breq_(\h{32})\b/, 1] }.find(&:itself)
      if t
        q = reqs.fetch(t) { fail!("a sample in req_#{t}, which the app never ran") }
        n[:inside] += s.count
        if got == t && s.labels["span_id"] == q["span"] && s.labels[ROUTE_LABEL] == q["route"]
          n[:right] += s.count
        elsif got && prev.fetch(t, []).include?(got)
          n[:prev] += s.count
        else
          n[:wrong] += s.count
          bad << "in req_#{t} (#{q["thread"]}): #{s.labels.slice(*CTX_LABELS).inspect}" if bad.size < 5
        end
      elsif frames.any? { |l| l.name =~ /\bbetween_requests\z/ }
        n[:outside] += s.count
        n[:outside_labelled] += s.count if CTX_LABELS.any? { |k| s.labels.key?(k) }
      end
    end
    [n, bad]
  end

  def threadctx_check(kind, work, model)
    raise Skip, "Ruby #{@rt.version} has no Fiber scheduler (3.0+; the app's is written for 3.1's interface)" if kind == "scheduler" && Gem::Version.new(@rt.version) < Gem::Version.new("3.1")
    r, facts = threadctx_run(kind, work, model)
    n, bad = threadctx_judge(r, facts)
    cpu = facts["requests"].sum { |q| q["cpu_s"] }
    # liveness floors (a busy machine gives the app less CPU: 80 inside seen at load 7); the
    # judgement is the shares below
    check(n[:inside] >= 40, "#{n[:inside]} samples inside requests (the app ran #{facts["requests"].size} requests, #{cpu.round(2)} CPU s)")
    check(n[:outside] >= 5, "#{n[:outside]} samples between requests")
    check(n[:foreign].zero?, "#{n[:foreign]} samples carry another thread's trace: #{bad.join("; ")}")
    check(n[:right] >= 0.99 * n[:inside], "#{n[:right]}/#{n[:inside]} samples inside requests carry their request's trace_id, span_id and #{ROUTE_LABEL}; " \
                                          "#{n[:prev]} the fiber switched away from, #{n[:wrong]} wrong: #{bad.join("; ")}")
    check(n[:prev] <= 0.01 * n[:inside], "#{n[:prev]}/#{n[:inside]} samples carry the fiber just switched away from")
    check(n[:outside_labelled].zero?, "#{n[:outside_labelled]}/#{n[:outside]} samples between requests carry a context")
    "#{kind}/#{work}/#{model}: #{n[:right]}/#{n[:inside]} inside requests right, #{n[:prev]} of the fiber switched away from, " \
      "#{n[:outside]} between requests with none, #{facts["requests"].size} requests"
  end

  # The extension loaded, nothing published: no context label, the stacks as before.
  def threadctx_unpublished
    r, facts = threadctx_run("threads", "cpu", "tlsdesc", publish: "no")
    labelled = r.samples.select { |s| CTX_LABELS.any? { |k| s.labels.key?(k) } }.sum(&:count)
    check(labelled.zero?, "#{labelled}/#{r.total} samples of an app that published nothing carry a context label")
    inside = r.samples.select { |s| r.prof.frames(s).any? { |l| l.name =~ /\breq_\h{32}\b/ } }.sum(&:count)
    check(inside >= 100, "#{inside}/#{r.total} samples in the requests' methods")
    "#{r.total} samples (#{inside} in #{facts["requests"].size} requests), none with a context label"
  end

  # A process context published after the profiler found the process (an SDK that starts late):
  # its thread context is located at a later look, and from then on the samples carry it.
  def threadctx_late
    r, facts = threadctx_run("threads", "cpu", "tlsdesc", publish: "late", duration: 8)
    n, bad = threadctx_judge(r, facts)
    labelled = n[:right] + n[:prev] + n[:wrong] - r.samples.select { |s| !s.labels.key?("trace_id") && r.prof.frames(s).any? { |l| l.name =~ /\breq_\h{32}\b/ } }.sum(&:count)
    check(n[:inside] >= 40, "#{n[:inside]} samples inside requests")
    check(n[:foreign].zero?, "#{n[:foreign]} samples carry another thread's trace: #{bad.join("; ")}")
    # published 3 s after the go, which comes just before the daemon starts: samples before it
    # carry nothing, those after the next look (within 2 s) carry their request's
    check(labelled >= 0.2 * n[:inside], "#{labelled}/#{n[:inside]} samples inside requests carry a context (published about 3 s into 8 s)")
    check(labelled < n[:inside], "every sample carries a context, also those before the context was published 3 s in")
    check(n[:right] == labelled, "#{labelled - n[:right]} of #{labelled} labelled samples carry the wrong request's context: #{bad.join("; ")}")
    "#{labelled}/#{n[:inside]} samples inside requests labelled after the late context, all right"
  end

  # A broken or hostile writer (scripts/threadctx_bad.rb): each kind of bad record gives the
  # labels that docs/trace-context.md ("Bad input") says, never a crash, the rest of the record
  # where it is sound; the process is profiled as any other; the summary counts each kind.
  def threadctx_bad_input
    so = otelctx_so("tlsdesc")
    r = profile_script("threadctx_bad.rb", so, duration: 5) { |f| go(f) }
    want = r.facts.fetch("want")
    got = Hash.new { |h, k| h[k] = Hash.new(0) }
    r.samples.each do |s|
      kind = r.prof.frames(s).lazy.map { |l| l.name[/\bbad_(\w+)\z/, 1] }.find(&:itself)
      next unless kind

      got[kind][s.labels.slice("trace_id", "span_id", ROUTE_LABEL, "http_method")] += s.count
    end
    want.each do |kind, labels|
      check(got[kind].values.sum >= 3, "#{got[kind].values.sum} samples in bad_#{kind}")
      check(got[kind].keys == [labels], "bad_#{kind}: labels #{got[kind].inspect}, want only #{labels.inspect}")
    end
    summary = r.stdout[/^thread contexts: .*$/]
    check(summary, "no thread-context line in the summary:\n#{r.stdout}")
    counts = summary.scan(/(\d+) (invalid|failed reads|size|entry|key|value)\b/).to_h { |n, k| [k, Integer(n)] }
    %w[invalid failed\ reads size entry key value].each do |k|
      check(counts.fetch(k, 0).positive?, "#{k}: not counted in #{summary.inspect}")
    end
    "#{want.size} kinds of record, each with the labels it should have; #{summary}"
  end

  # Service mode: the published service.name names the app; the same app publishing nothing is
  # named by its script.
  THREADCTX_CONF = <<~'CONF'
    frequency = 99
    rule = cmdline ~ . => ignore
  CONF

  def threadctx_service
    name = "ctx-shop-#{rand(1 << 20)}"
    conf = THREADCTX_CONF.sub("rule = cmdline ~ . => ignore",
                              "rule = cmdline ~ /threadctx_app\\.rb( |$)/ => team=ctx\nrule = cmdline ~ . => ignore")
    so = otelctx_so("tlsdesc")
    published = start("threadctx_app.rb", so, "yes", name, "threads", "cpu")
    plain = start("threadctx_app.rb", so, "no", name, "threads", "cpu")
    [published, plain].each { |f| go(f) }
    svc = service(["--interval", "2"], conf: conf)
    check(svc.wait_note(/READY=1/, 15), "no READY=1 on the notify socket:\n#{svc.log_text}")
    svc_wait(svc, "a profile of each app", 60) do
      g = by_service(svc)
      g.fetch(name, []).any? && g.fetch("threadctx_app", []).any?
    end
    svc.stop("TERM")
    g = by_service(svc)
    pids = ->(n) { g.fetch(n, []).flat_map { |_, path| PprofRaw.read(path).samples.map { |s| s.labels["pid"] } }.uniq }
    check(pids.(name) == [published["pid"].to_s], "#{name}: pids #{pids.(name).inspect}, published by #{published["pid"]}")
    check(!pids.("threadctx_app").include?(published["pid"].to_s), "the publishing app also named by its script")
    check(pids.("threadctx_app").include?(plain["pid"].to_s), "the app that published nothing is not named by its script")
    "#{name} for pid #{published["pid"]}, threadctx_app for pid #{plain["pid"]}"
  end

  READER_TESTS.each do |t, args|
    define_method("test_#{t}") { threadctx_check(*args) }
  end
  define_method(:test_threadctx_unpublished) { threadctx_unpublished }
  define_method(:test_threadctx_late) { threadctx_late }
  define_method(:test_threadctx_bad_input) { threadctx_bad_input }
  full_only :test_threadctx_late
  define_method(:test_threadctx_service) { threadctx_service }
  # the host's Ruby runs the cpu ones in `make test`; wall and the roots in the full suite
  full_only :test_threadctx_threads_wall, :test_threadctx_fibers_wall, :test_threadctx_scheduler_wall
  host_only :test_threadctx_service
  group :service, :test_threadctx_service
end
