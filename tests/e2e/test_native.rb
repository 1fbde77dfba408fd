# SPDX-License-Identifier: GPL-2.0-only
# --stacks mixed: native frames (CFI-unwound) on top of the Ruby stack (docs/native-stacks.md).
require "open3"
require "tmpdir"

class E2E
  # A script compressing with Zlib::Deflate.deflate: most of its samples in that C function show
  # libz's own frames on top of it, and the script's Ruby method under it.
  def test_native_zlib
    r = profile_script("zlib_work.rb", duration: 6, flags: ["--stacks", "mixed"])
    prof, samples = r.prof, r.samples
    native = ->(loc) { native?(prof, loc) }
    in_deflate, got = deflate_samples(r)
    good = in_deflate.select do |_, frames, idx|
      above = frames[0...idx]
      above.all?(&native) && above.any? { |l| l.name == "deflate" && l.file =~ /libz\.so/ } &&
        method?(frames[idx + 1], "compress_loop")
    end
    n = check_most_in_deflate(prof, in_deflate, good, got,
                              "show libz's deflate above it; most frequent stack")
    depth = good.sum { |s, _, idx| s.count * idx } / [n, 1].max.to_f
    ruby_only = samples.count { |s| prof.frames(s).none?(&native) }
    # libz's Mapping carries its build id, as the file has it
    libz = good.first[1].find { |l| l.file =~ /libz\.so/ }
    want_id = build_id_of(libz.file)
    check(want_id.nil? || prof.mappings[libz.mapping] == "#{libz.file} #{want_id}",
          "libz's mapping is #{prof.mappings[libz.mapping].inspect}, its build id #{want_id}")
    # every native Location has its function's address, inside its object's Mapping, where the
    # process maps it (what a server symbolizes with the build id)
    outside = prof.locations.values.select(&native).reject do |l|
      start, limit, = prof.ranges[l.mapping]
      l.address >= start && l.address < limit && start > 0
    end
    check(outside.empty?, "native locations without an address in their mapping: " +
          outside.first(3).map { |l| "#{l.name} 0x#{l.address.to_s(16)} #{prof.ranges[l.mapping].inspect}" }.join(", "))
    # libz's deflate is where this process mapped its symbol
    deflate = good.first[1].find { |l| l.name == "deflate" && l.file =~ /libz\.so/ }
    want = symbol_address(r.facts["pid"], deflate.file, "deflate")
    check(want.nil? || deflate.address == want,
          "deflate's location is at 0x#{deflate.address.to_s(16)}, the process has it at 0x#{want&.to_s(16)}")
    # the baseline: perf's frame-pointer call graphs of the same process (make deps installs perf)
    perf = perf_frames_per_sample(r.facts["pid"])
    check(depth > perf, "#{depth.round(1)} native frames per sample, perf -g finds #{perf.round(1)}")
    "#{n}/#{got} samples in deflate with libz frames, #{depth.round(1)} native frames each, " \
      "#{ruby_only} stacks without native frames; perf -g: #{perf.round(1)} frames per sample"
  end

  # Forked workers of one master (Puma, Unicorn clustered) map the same libruby, libz and
  # zlib.so: each object is parsed once for all of them (the summary counts it), and every
  # worker's samples in deflate still show libz's frames above it.
  def test_native_workers
    nworkers = 8
    f = start("zlib_workers.rb", nworkers.to_s)
    workers = f["workers"]
    mapped = File.readlines("/proc/#{workers[0]}/maps").filter_map { |l| l.split[5] }
                 .select { |p| p.start_with?("/") }.uniq
    # the workers exit before the run ends (which ends it): the objects go with the last of them
    args = workers.flat_map { |p| ["--pid", p.to_s] }
    # once the daemon samples and knows them (READY=1), until every worker has had 0.75 s of CPU
    # (75 samples at 99 Hz) under it, however busy the machine (8 workers share its CPUs)
    path, stdout, = rubyprofd(*args, "--duration", "300", "--stacks", "mixed") do
      c0 = workers.to_h { |p| [p, cpu_seconds(p) || fail!("worker #{p} is gone")] }
      wait_for("0.75 s of CPU in every worker", 120) do
        workers.all? { |p| (cpu_seconds(p) || fail!("worker #{p} is gone")) - c0[p] >= 0.75 }
      end
    ensure
      workers.each { |p| Process.kill("KILL", p) rescue nil }
    end
    prof = PprofRaw.read(path)
    line = stdout[/^native objects: .*$/]
    check(line, "no native objects line in the summary:\n#{stdout}")
    parsed, shared, freed = line.match(/(\d+) parsed, (\d+) times shared, \d+ at most at once, (\d+) freed/)
                                .captures.map(&:to_i)
    check(freed == parsed, "#{freed} of #{parsed} objects freed after every worker exited: #{line}")
    # each object once: at most the objects of the profile's native frames, and the few the
    # unwinder passes through without keeping a frame (ruby, ld.so below rb_vm_exec); without
    # sharing, each worker parses libruby, libz and zlib.so at least: 8 times each
    objects = prof.mappings.values.filter_map { |m| m.split.first if m.start_with?("/") }.uniq
    check(parsed.between?(3, [objects.size + 3, mapped.size].min),
          "#{parsed} objects parsed for #{nworkers} workers, whose frames are in #{objects.size} " \
          "objects (#{objects.map { |o| File.basename(o) }.join(", ")}), of #{mapped.size} mapped: #{line}")
    check(shared >= (nworkers - 1) * 3, "only #{shared} shared uses for #{nworkers} workers: #{line}")
    details = workers.map do |pid|
      in_deflate = prof.samples_of(pid).filter_map do |s|
        frames = prof.frames(s)
        idx = frames.index { |l| method?(l, "deflate") && prof.cfunc?(l) }
        [s, frames, idx] if idx
      end
      got = in_deflate.sum { |s, _, _| s.count }
      good = in_deflate.select do |_, frames, idx|
        frames[0...idx].any? { |l| l.name == "deflate" && l.file =~ /libz\.so/ } &&
          method?(frames[idx + 1], "worker_loop")
      end.sum { |s, _, _| s.count }
      check(got >= 10, "worker #{pid}: only #{got} samples in Zlib::Deflate.deflate")
      check(good >= 0.8 * got, "worker #{pid}: #{good}/#{got} samples in deflate show libz's deflate")
      "#{good}/#{got}"
    end
    "#{line.delete_prefix("native objects: ")}; per worker, samples in deflate with libz frames: " \
      "#{details.join(", ")}"
  end

  # A C++ library (built here with g++) called through Fiddle: its member function's frames carry
  # the name its source spells, demangled.
  CXX_BURN = <<~CXX
    namespace ns {
    class Class {
    public:
      static unsigned long method(int n);
    };
    __attribute__((noinline)) unsigned long Class::method(int n) {
      volatile unsigned long x = 0;
      for (long i = 0; i < (long)n * 1000000; i++) x = x + i;
      return x;
    }
    }
    extern "C" unsigned long rp_burn(int n) { return ns::Class::method(n) + 1; }
  CXX

  def test_native_cxx
    raise Skip, "g++ is missing" unless system("command -v g++ >/dev/null 2>&1")
    src = File.join(@rt.workdir, "cxx_burn.cc")
    lib = File.join(@rt.workdir, "libcxx_burn.so")
    File.write(src, CXX_BURN)
    _, err, st = Open3.capture3("g++", "-shared", "-fPIC", "-O1", "-o", lib, src)
    check(st.success?, "g++ failed: #{err}")
    r = profile_script("cxx_work.rb", lib, duration: 5, flags: ["--stacks", "mixed"])
    prof = r.prof
    in_cxx = r.samples.select do |s|
      frames = prof.frames(s)
      i = frames.index { |l| l.name == "ns::Class::method(int)" && l.file.end_with?("libcxx_burn.so") }
      i && frames[(i + 1)..].any? { |l| method?(l, "burn_loop") }
    end
    n = in_cxx.sum(&:count)
    mangled = r.samples.count { |s| prof.frames(s).any? { |l| l.name.start_with?("_Z") } }
    leaves = r.samples.max_by(&:count)
    check(n >= 0.5 * r.total,
          "only #{n}/#{r.total} samples in ns::Class::method(int) under burn_loop; most frequent:\n  " +
          prof.frames(leaves).first(6).map { |l| "#{fmt(l, prof)} (#{prof.mappings[l.mapping]})" }.join("\n  "))
    check(mangled.zero?, "#{mangled} samples with a mangled name")
    "#{n}/#{r.total} samples in ns::Class::method(int)"
  end

  # [[sample, frames, index of the Zlib::Deflate.deflate frame]], and their count: at least half
  # of the run's samples.
  def deflate_samples(r) = cfunc_samples(r, "deflate", "Zlib::Deflate.deflate")

  # The samples in the C method `name` (shown as `shown`), at least half of them: [[sample,
  # frames, the method's index in frames]...] and their count.
  def cfunc_samples(r, name, shown)
    inside = r.samples.filter_map do |s|
      frames = r.prof.frames(s)
      idx = frames.index { |l| method?(l, name) && r.prof.cfunc?(l) }
      [s, frames, idx] if idx
    end
    got = inside.sum { |s, _, _| s.count }
    check(got >= 0.5 * r.total, "only #{got}/#{r.total} samples in #{shown}")
    [inside, got]
  end

  # The samples of good (a selection of deflate_samples) are 80 % of those in deflate, else the
  # test fails saying what they were to show, with the most frequent stack in deflate. Their count.
  def check_most_in_deflate(prof, in_deflate, good, got, what)
    n = good.sum { |s, _, _| s.count }
    best = in_deflate.max_by { |s, _, _| s.count }
    check(n >= 0.8 * got,
          "#{n}/#{got} samples in deflate #{what}:\n  " +
          best[1].map { |l| "#{fmt(l, prof)} (#{prof.mappings[l.mapping]})" }.join("\n  "))
    n
  end

  # A native frame: its mapping is its object (pprof -raw prints the build id after the path).
  def native?(prof, loc)
    loc.file.start_with?("/") && prof.mappings[loc.mapping] =~ /\A#{Regexp.escape(loc.file)}( \h{40})?\z/
  end

  # A dynamic symbol's address in process pid: its value (readelf) plus where the process mapped
  # the file's offset 0 (/proc/PID/maps); nil without readelf.
  def symbol_address(pid, path, name)
    return nil unless system("command -v readelf >/dev/null 2>&1")
    out, = Open3.capture2("readelf", "-W", "--dyn-syms", File.join(@rt.root || "/", path), err: File::NULL)
    value = out.lines.map(&:split).find { |f| f[7] == name && f[3] == "FUNC" }&.dig(1)
    base = File.readlines("/proc/#{pid}/maps").map(&:split)
               .find { |f| f[5] == path && f[2].to_i(16).zero? }&.first&.split("-")&.first
    value && base && Integer(value, 16) + Integer(base, 16)
  end

  # The GNU build id of a file as the test's Ruby sees it (readelf), nil without readelf.
  def build_id_of(path)
    return nil unless system("command -v readelf >/dev/null 2>&1")
    out, = Open3.capture2("readelf", "-n", File.join(@rt.root || "/", path), err: File::NULL)
    out[/Build ID: (\h+)/, 1]
  end

  # Frames per sample of `perf record -e cpu-clock -g` on pid for 3 s. Without perf the test
  # fails: make deps installs it (linux-perf), and a comparison that is not made proves nothing.
  def perf_frames_per_sample(pid)
    check(system("command -v perf >/dev/null 2>&1"), "perf is not installed (make deps installs linux-perf)")
    Dir.mktmpdir("rp-perf") do |dir|
      data = File.join(dir, "perf.data")
      ok = system("perf", "record", "-q", "-e", "cpu-clock", "-F", "99", "-g", "-p", pid.to_s,
                  "-o", data, "--", "sleep", "3", out: File::NULL, err: File::NULL)
      check(ok, "perf record failed")
      out, = Open3.capture2("perf", "script", "-i", data, err: File::NULL)
      blocks = out.split(/\n\s*\n/).reject { |b| b.strip.empty? }
      check(!blocks.empty?, "perf recorded no sample of pid #{pid}")
      blocks.sum { |b| b.lines.size - 1 }.to_f / blocks.size
    end
  end

  # Ruby -> C -> Ruby -> C: Array#each's own C code (rb_ary_each, rb_yield) between the block it
  # runs and the Array#each frame, and libz's on top of Zlib::Deflate.deflate in that block.
  def test_native_nested
    r = profile_script("zlib_nested.rb", duration: 6, flags: ["--stacks", "mixed"])
    prof, samples = r.prof, r.samples
    native = ->(loc) { native?(prof, loc) }
    in_deflate, got = deflate_samples(r)
    each_c = in_deflate.any? { |_, f, _| f.any? { |l| method?(l, "each") && prof.cfunc?(l) } }
    good = in_deflate.select do |_, frames, idx|
      block = frames[idx + 1]
      next false unless block && block.name =~ /\Ablock .*compress_each\z/
      each = frames.index { |l| method?(l, "each") }
      next false unless each && each > idx + 1
      between = frames[(idx + 2)...each]
      frames[0...idx].any? { |l| l.name == "deflate" && l.file =~ /libz\.so/ } &&
        (!each_c || (!between.empty? && between.all?(&native) &&
                     between.any? { |l| l.name == "rb_ary_each" }))
    end
    n = check_most_in_deflate(prof, in_deflate, good, got,
                              "interleave Array#each's C frames under the block; most frequent other")
    "#{n}/#{got} samples in deflate interleaved#{each_c ? "" : " (Array#each is Ruby here)"}"
  end

  # Ruby -> C -> Ruby nested 40 deep: more native frames than are kept. The native stack is cut
  # where the bound is, marked there, and every Ruby frame stays, in Ruby's order.
  def test_native_truncated
    depth = 40
    r = profile_script("nested_deep.rb", depth.to_s, duration: 6, flags: ["--stacks", "mixed"])
    prof = r.prof
    want = r.facts["frames"].map { |f| f["label"] }
    in_deflate, got = deflate_samples(r)
    good = in_deflate.select do |_, frames, idx|
      # Ruby's backtrace, taken in the block that calls deflate, is the stack under it
      ruby = frames[(idx + 1)..].select { |l| prof.mappings[l.mapping] =~ /\A\[ruby( cfunc)?\]\z/ }
      marks = frames.each_index.select { |i| frames[i].name == "[native stack truncated]" }
      ruby.map { |l| ruby_label(l) } == want && marks.size == 1 && marks[0] > idx &&
        frames[0...idx].any? { |l| l.name == "deflate" && l.file =~ /libz\.so/ }
    end
    n = good.sum { |s, _, _| s.count }
    best = in_deflate.max_by { |s, _, _| s.count }
    bf, bi = best[1], best[2]
    bruby = bf[(bi + 1)..].select { |l| prof.mappings[l.mapping] =~ /\A\[ruby( cfunc)?\]\z/ }.map { |l| ruby_label(l) }
    diff = bruby.zip(want).index { |a, b| a != b }
    check(n >= 0.8 * got,
          "#{n}/#{got} samples keep Ruby's #{want.size} frames with one truncation mark; most frequent " \
          "has #{bruby.size} Ruby frames, first difference at #{diff.inspect}: " \
          "#{diff && [bruby[diff], want[diff]].inspect}, marks at " \
          "#{bf.each_index.select { |i| bf[i].name == "[native stack truncated]" }.inspect} (deflate at #{bi}):\n  " +
          best[1].last(20).map { |l| "#{fmt(l, prof)} (#{prof.mappings[l.mapping]})" }.join("\n  "))
    counted = r.stdout[/^native: .*?(\d+) truncated/, 1].to_i
    check(counted >= n, "the summary counts #{counted} truncated native stacks, the profile has #{n}")
    "#{n}/#{got} samples truncated and marked, #{want.size} Ruby frames kept"
  end

  # Ruby -> C -> Ruby -> C through a C extension of the tests' own (tests/e2e/cext/cbext.c, built
  # for this Ruby): CbExt.each_twice yields from its C helpers to a block whose Ruby methods call
  # CbExt.spin. Leaf first, a sample in spin is exactly
  #   cbext_spin ... CbExt.spin [c], spin_inner, spin_outer, the block,
  #   libruby's yield frames, cbext_inner, cbext_outer, cbext_each_twice ..., CbExt.each_twice [c],
  #   run_callbacks, <main>
  # and its Ruby frames are the ones caller_locations gave in spin_inner.
  def test_native_cext
    so = cbext_so
    r = profile_script("cext_callback.rb", so, duration: 6, flags: ["--stacks", "mixed"])
    prof, want = r.prof, r.facts["frames"]
    native = ->(loc) { native?(prof, loc) }
    ruby = ->(loc) { prof.mappings[loc.mapping] =~ /\A\[ruby( cfunc)?\]\z/ }
    ext = ->(loc, name) { loc.name == name && loc.file.end_with?("/cbext.so") }
    in_spin, got = cfunc_samples(r, "spin", "CbExt.spin")
    # the block is the last Ruby frame of the inner VM invocation
    blk = want.index { |w| w["label"].start_with?("block") }
    check(blk, "no block in the script's backtrace: #{show(want)}")
    shape = /\AN+C(R{#{blk + 1}})(N+)C(R{#{want.size - blk - 2}})\z/
    good = in_spin.select do |_, frames, idx|
      kinds = frames.map { |l| prof.cfunc?(l) ? "C" : ruby.(l) ? "R" : native.(l) ? "N" : "?" }.join
      m = shape.match(kinds) or next false
      rubies = frames[(idx + 1)..].select(&ruby)
      between = frames[m.begin(2)...m.end(2)]
      order = %w[cbext_inner cbext_outer cbext_each_twice].map { |n| between.index { |l| ext.(l, n) } }
      frames[0...idx].any? { |l| ext.(l, "cbext_spin") } &&
        rubies.size == want.size && rubies.zip(want).all? { |l, w| prof.cfunc?(l) ? ruby_label(l) == w["label"] : same?(l, w) } &&
        order.all? && order == order.sort && order[0] > 0 &&
        between[0...order[0]].all? { |l| l.file =~ /libruby/ }
    end
    n = good.sum { |s, _, _| s.count }
    best = (in_spin - good).max_by { |s, _, _| s.count } || in_spin.first
    check(n >= 0.8 * got,
          "#{n}/#{got} samples in CbExt.spin are Ruby -> C -> Ruby -> C as expected (want " \
          "#{show(want)}); most frequent other:\n  " +
          best[1].map { |l| "#{fmt(l, prof)} (#{prof.mappings[l.mapping]})" }.join("\n  "))
    frames = good.max_by { |s, _, _| s.count }[1]
    "#{n}/#{got} samples in CbExt.spin interleaved, #{frames.size} frames: " +
      frames.map { |l| l.name.sub(/\+0x\h+\z/, "+..") }.chunk_while { |a, b| a == b }.map(&:first).join(" < ")
  end

  # tests/e2e/cext/cbext.c compiled once per Ruby (build_cext), into the runtime's workdir
  # (inside the root for a root's Ruby).
  def cbext_so
    so = File.join(@rt.workdir, "cbext.so")
    File.exist?(so) ? so : build_cext("cbext.c", so, ["-fno-optimize-sibling-calls"])
  end

  # Debian's ruby-nokogiri on the host's Ruby: samples in Nokogiri's parser (the C method
  # Nokogiri::XML::Document.read_memory) show libxml2's own functions on top of it, and under it
  # Nokogiri's Ruby code, then the script's parse_doc and its callers, as caller_locations said.
  host_only :test_native_nokogiri
  def test_native_nokogiri
    ok = system(@rt.bin, "-e", "require 'nokogiri'", err: File::NULL)
    raise Skip, "nokogiri is not installed (scripts/deps.sh installs ruby-nokogiri)" unless ok
    r = profile_script("nokogiri_parse.rb", duration: 6, flags: ["--stacks", "mixed"])
    prof, want = r.prof, r.facts["frames"]
    native = ->(loc) { native?(prof, loc) }
    ruby = ->(loc) { prof.mappings[loc.mapping] =~ /\A\[ruby( cfunc)?\]\z/ }
    in_read = r.samples.filter_map do |s|
      frames = prof.frames(s)
      idx = frames.index { |l| method?(l, "read_memory") && prof.cfunc?(l) }
      [s, frames, idx] if idx
    end
    # read_memory's own time: no Ruby frame above it. The rest ran Ruby again from inside it
    # (Document#initialize, called by nokogiri.so, and the postponed jobs that free old documents).
    parsing = in_read.select { |_, frames, idx| frames[0...idx].none?(&ruby) }
    got = parsing.sum { |s, _, _| s.count }
    nested = in_read.sum { |s, _, _| s.count } - got
    check(got >= 0.5 * r.total, "only #{got}/#{r.total} samples in Nokogiri::XML::Document.read_memory's own code")
    # under read_memory: Nokogiri's Ruby code, then the script's frames as caller_locations gave them
    under = lambda do |frames, idx|
      rubies = frames[(idx + 1)..].select(&ruby)
      rubies.size > want.size && rubies[0...-want.size].all? { |l| l.file.include?("nokogiri") } &&
        rubies.last(want.size).zip(want).all? { |l, w| same?(l, w) }
    end
    good = parsing.select do |_, frames, idx|
      above = frames[0...idx]
      above.all?(&native) && above.any? { |l| l.name =~ /\Axml/ && l.file =~ %r{/libxml2\.so} } &&
        under.(frames, idx)
    end
    # Ruby run from inside read_memory: nokogiri.so's C frames between that Ruby and read_memory
    inner = in_read - parsing
    inner_good = inner.select do |_, frames, idx|
      last = frames[0...idx].rindex(&ruby)
      between = frames[(last + 1)...idx]
      under.(frames, idx) && !between.empty? && between.all?(&native) &&
        between.any? { |l| l.file.end_with?("/nokogiri.so") }
    end
    ni = inner_good.sum { |s, _, _| s.count }
    check(nested < 10 || ni >= 0.8 * nested,
          "#{ni}/#{nested} samples that ran Ruby inside read_memory show nokogiri.so's frames under it")
    n = good.sum { |s, _, _| s.count }
    best = (parsing - good).max_by { |s, _, _| s.count } || parsing.first
    check(n >= 0.8 * got,
          "#{n}/#{got} samples in read_memory show libxml2 above it and #{show(want)} under it; " \
          "most frequent other:\n  " + best[1].map { |l| "#{fmt(l, prof)} (#{prof.mappings[l.mapping]})" }.join("\n  "))
    # the libxml2 function each sample was in (its leaf-most libxml2 frame)
    xml = good.each_with_object(Hash.new(0)) { |(s, f, _), h| h[f.find { |l| l.file =~ /libxml2/ }.name] += s.count }
    "#{n}/#{got} samples in read_memory's code with libxml2 frames, #{ni}/#{nested} more ran Ruby " \
      "inside it under nokogiri.so's frames (#{r.total} in all); libxml2 functions: " +
      xml.max_by(5) { |_, c| c }.map { |k, c| "#{k} #{c}" }.join(", ")
  end
end
