# SPDX-License-Identifier: GPL-2.0-only
# Shipping: the service delivers every interval profile of two Ruby apps to a local stand-in of
# the collectors (tests/collector/collector.py: Pyroscope's /ingest and push API, Parca's
# WriteRaw), through a collector outage, a SIGKILL of the daemon mid-upload, a hung collector,
# TLS with a test CA, wrong credentials and refused profiles. Every profile the collector stored
# is read back with `go tool pprof -raw`; names, labels and times are checked against the apps.
require "json"
require "net/http"
require "set"

class E2E
  host_only :test_ship_pyroscope, :test_ship_pyroscope_push, :test_ship_parca, :test_ship_judged,
            :test_ship_collector_down, :test_ship_kill_mid_upload, :test_ship_hung_collector,
            :test_ship_tls, :test_ship_credentials, :test_ship_rejected, :test_ship_max_age
  group :service, :test_ship_pyroscope, :test_ship_pyroscope_push, :test_ship_parca, :test_ship_judged,
        :test_ship_collector_down, :test_ship_kill_mid_upload, :test_ship_hung_collector,
        :test_ship_tls, :test_ship_credentials, :test_ship_rejected, :test_ship_max_age

  COLLECTOR_PY = File.expand_path("../collector/collector.py", __dir__)
  # The two apps (process titles name them, docs/service-names.md step 4) and their work methods.
  SHIP_APPS = { "shipshop" => "shop_work", "shipjobs" => "jobs_work" }.freeze
  SHIP_INTERVAL = 2
  # Failed uploads to see in an outage before the collector comes back: enough retries that one
  # log line per attempt would show.
  SHIP_DOWN_ATTEMPTS = 6
  # test_ship_max_age's upload_max_age (seconds; 1 is the smallest the configuration takes)
  SHIP_MAX_AGE = 6

  # The stand-in collector: a Python process with its store (index.jsonl, profiles/) and a
  # control port for its fault modes. restart keeps the port and the store.
  class StandIn
    attr_reader :dir, :store, :port, :control_port, :log

    def initialize(dir, args = [])
      @dir = dir
      @store = File.join(dir, "store")
      @log = File.join(dir, "collector.log")
      @args = args
      start(0)
    end

    def start(port)
      portfile = File.join(@dir, "collector.ports")
      FileUtils.rm_f(portfile)
      @pid = Process.spawn("/usr/bin/python3", COLLECTOR_PY, "--store", @store, "--port", port.to_s,
                           "--control-port", "0", "--port-file", portfile, *@args,
                           out: [@log, "a"], err: [@log, "a"])
      deadline = Time.now + 60
      until File.exist?(portfile)
        if Process.waitpid(@pid, Process::WNOHANG)
          @pid = nil
          raise Failure, "the collector exited:\n#{log_text}"
        end
        raise Failure, "the collector is not ready after 60 s:\n#{log_text}" if Time.now > deadline

        sleep 0.05
      end
      ports = JSON.parse(File.read(portfile))
      @port = ports.fetch("port")
      @control_port = ports.fetch("control_port")
    end

    def kill
      return unless @pid

      Process.kill("KILL", @pid) rescue nil
      Process.waitpid(@pid) rescue nil
      @pid = nil
    end

    # Back on the same port, with the same store.
    def restart
      kill
      start(@port)
    end

    def index
      path = File.join(@store, "index.jsonl")
      File.exist?(path) ? File.readlines(path).reject { |l| l.strip.empty? }.map { |l| JSON.parse(l) } : []
    end

    def held
      path = File.join(@store, "held.jsonl")
      File.exist?(path) ? File.readlines(path).map { |l| JSON.parse(l) } : []
    end

    # The seqs of stored profiles whose answer was sent (a stored seq not in it was cut off).
    def answered
      path = File.join(@store, "answered.jsonl")
      File.exist?(path) ? File.readlines(path).flat_map { |l| JSON.parse(l).fetch("seqs") } : []
    end

    def path_of(entry) = File.join(@store, entry.fetch("file"))

    def control(**kw)
      res = Net::HTTP.post(URI("http://127.0.0.1:#{@control_port}/control"), JSON.generate(kw))
      raise Failure, "collector control #{kw}: #{res.code} #{res.body}" unless res.code == "200"

      JSON.parse(res.body)
    end

    def state = JSON.parse(Net::HTTP.get(URI("http://127.0.0.1:#{@control_port}/state")))

    def log_text = File.exist?(@log) ? File.read(@log) : ""
  end

  def ship_skip_unless_shipper
    help, = Open3.capture2e(RUBYPROFD, "--help")
    raise Skip, "this rubyprofd has no shipper (no --upload-url in --help)" unless help.include?("--upload-url")
  end

  def ship_wait_for(what, timeout, interval: 0.2)
    deadline = Time.now + timeout
    until (v = yield)
      fail!("#{what}: not after #{timeout} s") if Time.now > deadline
      sleep interval
    end
    v
  end

  # The service's configuration for shipping to url. extra: more keys (an array value repeats
  # the key).
  def ship_conf(url, protocol, extra = {})
    keys = {
      "frequency" => "49",
      "label" => "env=test",
      # the test runner is a Ruby too
      "rule" => 'cmdline ~ tests/e2e/run\.rb => ignore',
      "upload_url" => url,
      "upload_protocol" => protocol,
      "upload_backoff_max" => "2s",
      "upload_connect_timeout" => "5s",
      # longer than any test holds an upload: a held request is never retried by a timeout
      "upload_timeout" => "60s",
    }.merge(extra)
    keys.flat_map { |k, v| Array(v).map { |x| "#{k} = #{x}\n" } }.join
  end

  # What most tests here start from: a stand-in collector (collector_args), the two apps, and the
  # service shipping to the collector with protocol (conf: more keys). Returns the directory, the
  # collector, the metrics port, the apps, the service and the time the service was started.
  def ship_start(protocol, collector_args: [], conf: {})
    ship_skip_unless_shipper
    dir = Dir.mktmpdir("rubyprofd-ship-")
    col = StandIn.new(dir, collector_args)
    mport = 20000 + rand(20000)
    apps = ship_apps
    svc = ship_service(dir, mport, conf: ship_conf("http://127.0.0.1:#{col.port}", protocol, conf))
    [dir, col, mport, apps, svc, Time.now]
  end

  # Waits until the collector holds n profiles of the apps.
  def ship_wait_first(col, n)
    ship_wait_for("first deliveries", 180) { col.index.count { |e| SHIP_APPS.key?(e["app"]) } >= n }
  end

  # SIGKILLs the service while an upload is in flight (the collector takes it, stores it and never
  # answers), then starts it again, pause seconds later, with the collector answering. Returns the
  # new service, the time of the kill and the time it was back.
  def ship_kill_in_flight(svc, col, dir, mport, pause: 0)
    col.control(mode: "hang", store: true)
    ship_wait_for("an upload in flight", 180) { col.state["hung"] >= 1 }
    kill_at = Time.now
    svc.kill
    col.control(mode: "ok")
    sleep pause
    [ship_service(dir, mport), kill_at, Time.now]
  end

  # After ship_kill_in_flight: profiles arrive again, the apps stop, the spool drains, and every
  # interval but the kill's gap is in the collector; the request the kill cut was held and
  # stored once. Returns the check's summary and the held requests.
  def ship_check_after_kill(svc, col, apps, protocol, t0, kill_at, back_at)
    ship_wait_profiles(col, 2, since: back_at)
    t1 = ship_stop_apps(apps)
    ship_wait_drained(svc, col, t1)
    summary = ship_check(col, apps, protocol, t0: t0, t1: t1, gaps: [[kill_at, back_at]])
    held = col.held
    check(held.size == 1 && held[0]["stored"], "held requests: #{held.inspect}")
    [summary, held]
  end

  def ship_apps
    SHIP_APPS.to_h do |name, work|
      [name, start("app.rb", "puma 6.4.0 (tcp://0.0.0.0:3000) [#{name}]", work)]
    end
  end

  # Kills the apps; returns the time they were gone.
  def ship_stop_apps(apps)
    apps.each_value do |facts|
      pid = facts["pid"]
      Process.kill("KILL", -pid) rescue nil
      Process.waitpid(pid) rescue nil
      @pids.delete(pid)
    end
    Time.now
  end

  def ship_service(dir, mport, conf: nil)
    FileUtils.mkdir_p(dir)
    File.write(File.join(dir, "rubyprofd.conf"), conf) if conf
    svc = Service.new(dir, ["--interval", SHIP_INTERVAL.to_s, "--metrics-address", "127.0.0.1:#{mport}"])
    check(svc.wait_note(/READY=1/, 60), "the service is not ready:\n#{svc.log_text}")
    svc
  end

  # Spool pairs of the test's apps (rejected/ is a directory of its own: not listed).
  def ship_spooled(svc) = svc.profiles.select { |meta, _| SHIP_APPS.key?(meta["service"]) }

  # Waits until the interval in which the apps died (at t1) is written and every profile of
  # theirs left the spool (delivered, moved aside or dropped). On a loaded machine an interval
  # can last much longer than SHIP_INTERVAL: the deadlines are generous.
  def ship_wait_drained(svc, col, t1, timeout: 180)
    deadline = Time.now + timeout
    ended = lambda do |name|
      ends = col.index.select { |e| e["app"] == name }.map { |e| e["time_nanos"] + e["duration_nanos"] }
      ends += ship_spooled(svc).select { |m, _| m["service"] == name }.map { |m, _| m["until_ns"] }
      ends += Dir[File.join(svc.spool, "rejected", "*.json")].map { |j| JSON.parse(File.read(j)) }
                                                              .select { |m| m["service"] == name }.map { |m| m["until_ns"] }
      ends.max.to_i >= (t1.to_f - SHIP_INTERVAL - 2) * 1e9
    end
    begin
      ship_wait_for("the apps' last intervals", timeout) { SHIP_APPS.keys.all?(&ended) }
    rescue Failure => e
      last = SHIP_APPS.keys.to_h do |name|
        [name, [col.index.select { |x| x["app"] == name }.map { |x| x["time_nanos"] + x["duration_nanos"] }.max,
                ship_spooled(svc).select { |m, _| m["service"] == name }.map { |m, _| m["until_ns"] }.max]]
      end
      fail!("#{e.message}: the apps died at #{(t1.to_f * 1e9).to_i}; last ends (collector, spool): #{last.inspect}\n" \
            "collector index: #{col.index.map { |x| [x["app"], x["time_nanos"], x["duration_nanos"]] }.inspect}\n" \
            "spool: #{svc.profiles.map { |m, _| [m["service"], m["from_ns"], m["until_ns"]] }.inspect}\n" \
            "service log:\n#{svc.log_text.lines.last(40).join}collector log:\n#{col.log_text.lines.last(30).join}")
    end
    ship_wait_for("the spool still holds #{ship_spooled(svc).size} profiles of the apps",
             [deadline - Time.now, 1].max) { ship_spooled(svc).empty? }
  end

  # Lets the apps run until the collector has n profiles of each.
  # since: only profiles that start at that Time or later count (those of a daemon started
  # then, not the ones an earlier daemon spooled and this one delivers at once).
  def ship_wait_profiles(col, n, timeout: 180, since: nil)
    from = since ? (since.to_r * 1_000_000_000).to_i : 0
    what = since ? "#{n} profiles of each app from #{since.strftime("%T.%L")} on" : "#{n} profiles of each app"
    ship_wait_for("#{what} in the collector", timeout) do
      SHIP_APPS.keys.all? { |name| col.index.count { |e| e["app"] == name && e["time_nanos"] >= from } >= n }
    end
  end

  # rubyprofd_upload_failures_total by cause: {"network" => 3.0, ...}
  def ship_failures(mport)
    metrics(mport).body.scan(/^rubyprofd_upload_failures_total\{cause="(\w+)"\} (\S+)$/)
                  .to_h { |c, v| [c, Float(v)] }
  end

  def ship_metric(mport, name)
    body = metrics(mport).body
    v = body[/^#{Regexp.escape(name)} (\S+)$/, 1]
    fail!("no #{name} in the metrics:\n#{body}") unless v
    Float(v)
  end

  # The judgement: in the collector, for each app, profiles that follow each other without a gap
  # from the daemon's start t0 to the apps' end t1 (gaps: [[from, to], ...] when no daemon ran,
  # extra: intervals not in the collector by design, e.g. moved aside), each read by
  # `go tool pprof -raw`, with the app's own work in its samples, its name, labels and times,
  # arriving in order. Returns a summary.
  def ship_check(col, apps, protocol, t0:, t1:, gaps: [], extra: {})
    entries = col.index
    want_proto = protocol == "parca" ? /\Aparca-(grpc-web|json)\z/ : /\A#{Regexp.escape(protocol)}\z/
    summary = []
    apps.each_key do |name|
      work = SHIP_APPS.fetch(name)
      others = SHIP_APPS.values - [work]
      mine = entries.select { |e| e["app"] == name }
      check(mine.size >= 2, "#{name}: #{mine.size} profiles in the collector (apps there: #{entries.map { |e| e["app"] }.uniq.inspect})")
      first_seen = mine.uniq { |e| e["sha256"] }
      # in order: the first arrival of each profile follows the profiles' times
      times = first_seen.map { |e| e["time_nanos"] }
      check(times == times.sort, "#{name}: profiles arrived out of order: #{times.inspect}")
      pieces = first_seen.map { |e| [e["time_nanos"], e["time_nanos"] + e["duration_nanos"], e] }
      pieces += extra.fetch(name, []).map { |f, u| [f, u, nil] }
      pieces.sort_by!(&:first)
      check(pieces.first[0] <= (t0.to_f + SHIP_INTERVAL + 2) * 1e9,
            "#{name}: the first profile starts at #{pieces.first[0]}, the daemon at #{t0.to_f}")
      check(pieces.last[1] >= (t1.to_f - SHIP_INTERVAL - 2) * 1e9,
            "#{name}: the last profile ends at #{pieces.last[1]}, the app at #{t1.to_f}")
      pieces.each_cons(2) do |a, b|
        next if a[1] == b[0]

        allowed = gaps.any? do |g0, g1|
          a[1] >= (g0.to_f - SHIP_INTERVAL - 2) * 1e9 && b[0] <= (g1.to_f + SHIP_INTERVAL + 2) * 1e9
        end
        check(allowed, "#{name}: a gap from #{a[1]} to #{b[0]} (#{((b[0] - a[1]) / 1e9).round(2)} s) " \
                       "outside the daemon's downtimes #{gaps.map { |g| g.map(&:to_f) }.inspect}")
      end
      first_seen.each do |e|
        where = "#{name} #{e["file"]}"
        check(e["protocol"] =~ want_proto, "#{where}: protocol #{e["protocol"]}")
        labels = e["labels"]
        check(labels["env"] == "test", "#{where}: labels #{labels.inspect}")
        check(labels.fetch("service_name", name) == name, "#{where}: service_name #{labels.inspect}")
        # (a loaded machine can stretch an interval far beyond SHIP_INTERVAL: the daemon's
        # matter, not the shipper's; this only catches garbage)
        check(e["duration_nanos"].positive? && e["duration_nanos"] <= 60 * SHIP_INTERVAL * 1e9,
              "#{where}: duration #{e["duration_nanos"]}")
        if protocol == "pyroscope"
          check((e["from_ns"] - e["time_nanos"]).abs < 1e9 &&
                (e["until_ns"] - e["time_nanos"] - e["duration_nanos"]).abs < 1e9,
                "#{where}: from/until #{e["from_ns"]}/#{e["until_ns"]}, the profile's " \
                "#{e["time_nanos"]}+#{e["duration_nanos"]}")
          check(e["sample_rate"] == 49 && e["spy_name"] == "rubyprofd",
                "#{where}: sampleRate #{e["sample_rate"]} spyName #{e["spy_name"]}")
        end
        prof, n, total = count_method(col.path_of(e), work)
        check(total.positive?, "#{where}: no samples")
        # thread_names = auto (the default): Pyroscope makes a series of every string label of a
        # sample, so what goes to it has no thread_name; Parca keeps it (its tid beside it)
        named = prof.samples.count { |s| s.labels.key?("thread_name") }
        if protocol.start_with?("pyroscope")
          check(named.zero? && prof.samples.all? { |s| s.labels.key?("tid") },
                "#{where}: #{named}/#{prof.samples.size} samples with a thread_name label sent to Pyroscope (thread_names = auto)")
        else
          check(named == prof.samples.size, "#{where}: #{named}/#{prof.samples.size} samples with a thread_name label sent to #{protocol}")
        end
        check(total < 10 || n >= 0.8 * total, "#{where}: #{n}/#{total} samples in #{work}")
        stray = prof.samples.select { |s| prof.frames(s).any? { |l| others.any? { |o| method?(l, o) } } }
        check(stray.empty?, "#{where}: samples of the other app's work")
      end
      summary << "#{name} #{first_seen.size}"
    end
    summary.join(", ")
  end

  # Profile sha256s stored more than once: {sha => count}.
  def ship_duplicates(col)
    col.index.group_by { |e| e["sha256"] }.transform_values(&:size).select { |_, n| n > 1 }
  end

  # Duplicates no cut explains. A client sends a profile again only when it never got the answer
  # to an earlier copy: every copy but the last must be one the collector stored and never
  # answered (held, or the collector killed between its store and its answer), and the last one
  # answered. Returns {sha256 => [[seq, answered?], ...]} of the profiles that break the rule.
  def ship_unexplained_duplicates(col)
    answered = col.answered.to_set
    col.index.group_by { |e| e["sha256"] }.filter_map do |sha, copies|
      next if copies.size < 2

      marks = copies.sort_by { |e| e["seq"] }.map { |e| [e["seq"], answered.include?(e["seq"])] }
      [sha, marks] unless marks[0..-2].none? { |_, a| a } && marks[-1][1]
    end.to_h
  end

  # a. Two apps, every interval of both delivered with their names and labels, for each protocol.
  # The Pyroscope run also requires a tenant, a bearer token and an extra header, and checks that
  # the uploads share a keep-alive connection.
  def ship_two_apps(protocol, collector_args: [], conf: {})
    _dir, col, mport, apps, svc, t0 = ship_start(protocol, collector_args: collector_args, conf: conf)
    begin
      ship_wait_profiles(col, 4)
      t1 = ship_stop_apps(apps)
      ship_wait_drained(svc, col, t1)
      summary = ship_check(col, apps, protocol, t0: t0, t1: t1)
      check(ship_duplicates(col).empty?, "resent profiles: #{ship_duplicates(col)}")
      check(ship_metric(mport, "rubyprofd_upload_resends_total").zero?, "resends counted")
      # every profile the collector stored was counted (the daemon counts when the answer comes)
      stored = col.index.size
      deadline = Time.now + 30
      ok = ship_metric(mport, "rubyprofd_upload_ok_total")
      ok = (sleep(0.5) && ship_metric(mport, "rubyprofd_upload_ok_total")) while ok < stored && Time.now < deadline
      check(ok >= stored, "rubyprofd_upload_ok_total #{ok}, the collector stored #{stored}")
      check(ship_metric(mport, "rubyprofd_collector_up") == 1, "collector_up is not 1")
      yield col, svc if block_given?
      st, = svc.stop("TERM")
      check(st.exitstatus == 0, "exit #{st.inspect}\n#{svc.log_text}")
      "#{summary} profiles via #{protocol}"
    ensure
      svc.kill
      col.kill
    end
  end

  def test_ship_pyroscope
    token = "tok-#{rand(1 << 40)}"
    dir = Dir.mktmpdir("rubyprofd-secret-")
    File.write(File.join(dir, "token"), "#{token}\n")
    ship_two_apps("pyroscope", collector_args: ["--token", token, "--tenant", "fleet-1"],
                               conf: { "upload_token_file" => File.join(dir, "token"),
                                       "upload_tenant_id" => "fleet-1",
                                       "upload_header" => ["X-Ship-Test: yes"] }) do |col, svc|
      entries = col.index
      check(entries.all? { |e| e["tenant"] == "fleet-1" && e["auth"] == "Bearer" },
            "tenant/auth: #{entries.map { |e| [e["tenant"], e["auth"]] }.uniq.inspect}")
      check(entries.all? { |e| e.dig("extra_headers", "X-Ship-Test") == "yes" },
            "extra header: #{entries.first["extra_headers"].inspect}")
      conns = entries.map { |e| e["connection"] }.uniq
      check(conns.size * 2 <= entries.size, "#{entries.size} uploads over #{conns.size} connections: no keep-alive")
      check(!svc.log_text.include?(token), "the token is in the log")
    end
  ensure
    FileUtils.rm_rf(dir) if dir
  end

  def test_ship_pyroscope_push
    dir = Dir.mktmpdir("rubyprofd-secret-")
    File.write(File.join(dir, "basic"), "fleet:pa55\n")
    ship_two_apps("pyroscope-push", collector_args: ["--basic-auth", "fleet:pa55"],
                                    conf: { "upload_basic_auth_file" => File.join(dir, "basic") }) do |col, _|
      check(col.index.all? { |e| e["auth"] == "Basic" }, "no basic auth")
    end
  ensure
    FileUtils.rm_rf(dir) if dir
  end

  def test_ship_parca = ship_two_apps("parca")

  # The issue's judged scenario: two apps, the collector stopped for a while, the daemon killed
  # once mid-upload; when both are back, every interval of both apps is in the collector, a
  # resend only for the upload the kill cut off, each profile readable by go tool pprof.
  def test_ship_judged
    dir, col, mport, apps, svc, t0 = ship_start("pyroscope")
    begin
      ship_wait_first(col, 4)
      col.kill # the collector stopped for a while: until 4 profiles wait in the spool
      ship_wait_for("4 profiles kept while the collector is down", 120, interval: 0.5) { ship_spooled(svc).size >= 4 }
      check(ship_spooled(svc).size >= 4, "profiles kept while the collector is down: #{ship_spooled(svc).size}")
      col.restart
      svc, kill_at, back_at = ship_kill_in_flight(svc, col, dir, mport, pause: 3)
      summary, held = ship_check_after_kill(svc, col, apps, "pyroscope", t0, kill_at, back_at)
      dups = ship_duplicates(col)
      cut = col.index.find { |e| e["request_sha256"] == held[0]["request_sha256"] }
      check(cut && dups.key?(cut["sha256"]), "resent: #{dups.inspect}, the cut upload #{cut&.fetch("file")}")
      # the daemon's kill cut one upload; the collector's own kill may have cut one more (stored,
      # never answered): each is resent once, no answered profile ever again
      odd = ship_unexplained_duplicates(col)
      check(odd.empty?, "resent though answered ([seq, answered]): #{odd}")
      by_collector = dups.sum { |_, n| n - 1 } - 1
      check(by_collector <= 1, "#{by_collector} resends beside the cut one: #{dups.inspect}")
      pair = col.index.select { |e| e["sha256"] == cut["sha256"] }
      check(pair.map { |e| e["path"] }.uniq.size == 1, "the resend differs: #{pair.map { |e| e["path"] }}")
      resends = ship_metric(mport, "rubyprofd_upload_resends_total")
      check(resends == 1, "rubyprofd_upload_resends_total #{resends}")
      "#{summary}; resent once: #{cut["file"]} (#{cut["app"]})#{by_collector.zero? ? "" : "; one more cut by the collector's kill"}"
    ensure
      svc.kill
      col.kill
    end
  end

  # b. The collector down: the profiles wait in the spool, and every interval arrives, in order,
  # when it is back. The outage lasts until the spool holds 10 profiles of the apps and the
  # shipper has failed at least SHIP_DOWN_ATTEMPTS times (upload_backoff_max 2s: a retry every 1
  # to 2 s): what the checks need, where a fixed minute's sleep made this the slowest e2e test.
  def test_ship_collector_down
    _dir, col, mport, apps, svc, t0 = ship_start("pyroscope")
    begin
      ship_wait_first(col, 2)
      log_mark = svc.log_text.lines.size
      col.kill
      down_at = Time.now
      # (the conditions asserted below, waited for with a generous deadline)
      ship_wait_for("10 profiles kept and #{SHIP_DOWN_ATTEMPTS} failed attempts", 120, interval: 0.5) do
        ship_spooled(svc).size >= 10 && ship_failures(mport)["network"].to_f >= SHIP_DOWN_ATTEMPTS
      end
      down_for = Time.now - down_at
      kept = ship_spooled(svc).size
      check(kept >= 10, "#{kept} profiles of the apps in the spool after #{down_for.round} s down")
      check(ship_metric(mport, "rubyprofd_collector_up").zero?, "collector_up while it is down")
      failures = ship_failures(mport)
      check(failures["network"].to_f.positive?, "failures: #{failures.inspect}")
      check(ship_metric(mport, "rubyprofd_spool_backlog_profiles") >= kept, "backlog metric")
      # one line when it went down, not one per attempt (other Rubies on the host may add lines
      # of their own: only the shipper's count)
      down_lines = svc.log_text.lines.drop(log_mark).grep(/upload|collector|ship|connect/i)
      check(down_lines.size.between?(1, 2),
            "log lines of #{failures["network"].to_i} failed attempts in #{down_for.round} s down:\n#{down_lines.join}")
      col.restart
      ship_wait_profiles(col, kept / 2 + 4)
      t1 = ship_stop_apps(apps)
      ship_wait_drained(svc, col, t1)
      summary = ship_check(col, apps, "pyroscope", t0: t0, t1: t1)
      odd = ship_unexplained_duplicates(col)
      check(odd.empty?, "resent though answered ([seq, answered]): #{odd}")
      cuts = ship_duplicates(col).size
      "#{kept} kept during #{down_for.round} s down, #{failures["network"].to_i} failed attempts#{cuts.zero? ? "" : ", #{cuts} cut by the collector's kill and resent"}; #{summary}"
    ensure
      svc.kill
      col.kill
    end
  end

  # c. SIGKILL while an upload is in flight (the collector stored it but never answered):
  # after the restart, nothing is lost and only that profile is sent again, byte for byte.
  def test_ship_kill_mid_upload
    dir, col, mport, apps, svc, t0 = ship_start("pyroscope-push")
    begin
      ship_wait_first(col, 2)
      svc, kill_at, back_at = ship_kill_in_flight(svc, col, dir, mport)
      summary, held = ship_check_after_kill(svc, col, apps, "pyroscope-push", t0, kill_at, back_at)
      cut = col.index.select { |e| e["request_sha256"] == held[0]["request_sha256"] }
      check(cut.size == 2, "the cut request arrived #{cut.size} times (byte for byte)")
      check(ship_duplicates(col) == { cut[0]["sha256"] => 2 }, "resent: #{ship_duplicates(col)}")
      resends = ship_metric(mport, "rubyprofd_upload_resends_total")
      check(resends == 1, "rubyprofd_upload_resends_total #{resends}")
      "#{summary}; one resend (#{cut[0]["app"]})"
    ensure
      svc.kill
      col.kill
    end
  end

  # d. A hung collector: sampling goes on (no ring-buffer drop, profiles keep landing in the
  # spool), and the backlog drains when it answers again. It hangs until 4 more profiles are
  # spooled and 5 watchdog pings came (a fixed 20 s before).
  def test_ship_hung_collector
    _dir, col, mport, apps, svc, t0 = ship_start("pyroscope")
    begin
      ship_wait_first(col, 2)
      col.control(mode: "hang")
      ship_wait_for("an upload in flight", 180) { col.state["hung"] >= 1 }
      before = ship_spooled(svc).size
      pings0 = svc.read_notes.count { |n| n.include?("WATCHDOG=1") }
      hung_at = Time.now
      ship_wait_for("4 more profiles spooled and 5 watchdog pings while the collector hangs", 50, interval: 0.5) do
        ship_spooled(svc).size >= before + 4 && svc.read_notes.count { |n| n.include?("WATCHDOG=1") } - pings0 >= 5
      end
      hung_for = Time.now - hung_at
      during = ship_spooled(svc).size
      check(during >= before + 4,
            "the spool went from #{before} to #{during} profiles in #{hung_for.round} s of a hung collector")
      drops = ship_metric(mport, 'rubyprofd_dropped_samples_total{cause="ring_buffer_full"}')
      check(drops.zero?, "#{drops} ring-buffer drops while the collector hangs")
      pings = svc.read_notes.count { |n| n.include?("WATCHDOG=1") } - pings0
      check(pings >= 5, "#{pings} watchdog pings in #{hung_for.round} s of a hung collector")
      col.control(mode: "ok")
      t1 = ship_stop_apps(apps)
      ship_wait_drained(svc, col, t1)
      summary = ship_check(col, apps, "pyroscope", t0: t0, t1: t1)
      check(ship_duplicates(col).empty?, "resent: #{ship_duplicates(col)}")
      drops = ship_metric(mport, 'rubyprofd_dropped_samples_total{cause="ring_buffer_full"}')
      check(drops.zero?, "#{drops} ring-buffer drops")
      "#{during - before} profiles spooled during #{hung_for.round} s of a hung collector; #{summary}"
    ensure
      svc.kill
      col.kill
    end
  end

  # A CA and a server certificate for 127.0.0.1 and localhost, made with openssl's CLI.
  def ship_test_ca(dir)
    run = lambda do |*args|
      out, st = Open3.capture2e("openssl", *args, chdir: dir)
      fail!("openssl #{args.join(" ")}: #{out}") unless st.success?
    end
    run.call("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
             "-days", "2", "-subj", "/CN=rubyprofd test CA")
    run.call("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
             "-subj", "/CN=localhost")
    File.write(File.join(dir, "san.cnf"), "subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    run.call("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
             "-out", "server.pem", "-days", "2", "-extfile", "san.cnf")
    %w[ca.pem server.pem server.key].map { |f| File.join(dir, f) }
  end

  # e. HTTPS with certificate verification: refused without the test CA, delivered with it.
  def test_ship_tls
    ship_skip_unless_shipper
    dir = Dir.mktmpdir("rubyprofd-ship-")
    tls = File.join(dir, "tls")
    FileUtils.mkdir_p(tls)
    ca, cert, key = ship_test_ca(tls)
    col = StandIn.new(dir, ["--tls-cert", cert, "--tls-key", key])
    mport = 20000 + rand(20000)
    apps = ship_apps
    url = "https://localhost:#{col.port}"
    svc = ship_service(dir, mport, conf: ship_conf(url, "pyroscope"))
    t0 = Time.now
    begin
      ship_wait_for("a refused TLS handshake", 180) { col.log_text.include?("TLS handshake failed") }
      sleep SHIP_INTERVAL
      check(col.index.empty?, "delivered without the CA")
      failures = ship_failures(mport)
      check(failures["tls"].to_f.positive?, "no TLS failure counted: #{failures.inspect}")
      stop_at = Time.now
      st, = svc.stop("TERM")
      check(st.exitstatus == 0, "exit #{st.inspect}")
      svc = ship_service(dir, mport, conf: ship_conf(url, "pyroscope", "upload_ca_file" => ca))
      back_at = Time.now
      # the new daemon's own profiles: the spooled ones come in at once, before it sampled
      ship_wait_profiles(col, 2, since: back_at)
      t1 = ship_stop_apps(apps)
      ship_wait_drained(svc, col, t1)
      summary = ship_check(col, apps, "pyroscope", t0: t0, t1: t1, gaps: [[stop_at, back_at]])
      "#{summary} over HTTPS (test CA)"
    ensure
      svc.kill
      col.kill
    end
  end

  # f. Wrong credentials: one clear log line, the profiles kept; delivered after SIGHUP with a
  # corrected token file. Neither token is ever logged.
  def test_ship_credentials
    ship_skip_unless_shipper
    dir = Dir.mktmpdir("rubyprofd-ship-")
    good = "good-#{rand(1 << 40)}"
    bad = "bad-#{rand(1 << 40)}"
    token = File.join(dir, "token")
    File.write(token, "#{bad}\n")
    col = StandIn.new(dir, ["--token", good])
    mport = 20000 + rand(20000)
    apps = ship_apps
    svc = ship_service(dir, mport, conf: ship_conf("http://127.0.0.1:#{col.port}", "pyroscope",
                                                  "upload_token_file" => token))
    t0 = Time.now
    begin
      ship_wait_for("a 401", 180) { col.state.dig("statuses", "401").to_i >= 1 }
      ship_wait_for("4 profiles kept", 180) { ship_spooled(svc).size >= 4 }
      check(col.index.empty?, "delivered with a wrong token")
      kept = ship_spooled(svc).size
      lines = svc.log_text.lines.grep(/401|unauthori[sz]ed|credential|forbidden/i)
      check(lines.size == 1, "log lines about the credentials:\n#{lines.join}\n--\n#{svc.log_text}")
      failures = ship_failures(mport)
      check(failures["auth"].to_f.positive?, "no auth failure counted: #{failures.inspect}")
      File.write(token, "#{good}\n")
      Process.kill("HUP", svc.pid)
      ship_wait_for("delivery after SIGHUP", 180) { col.index.size >= kept }
      t1 = ship_stop_apps(apps)
      ship_wait_drained(svc, col, t1)
      summary = ship_check(col, apps, "pyroscope", t0: t0, t1: t1)
      log = svc.log_text
      check(!log.include?(good) && !log.include?(bad), "a token is in the log")
      "#{kept} kept while refused; #{summary}; the log line: #{lines[0].strip}"
    ensure
      svc.kill
      col.kill
    end
  end

  # Profiles older than upload_max_age when the collector comes back are dropped, counted, not
  # sent; the rest arrive. The collector's own window (60 s) is wider, so nothing is refused.
  # The shipper's retries drop the too old profiles while the collector is down: it stays down
  # until 4 are dropped (a fixed 40 s with a 20 s max age before).
  def test_ship_max_age
    _dir, col, mport, apps, svc, t0 = ship_start("pyroscope", collector_args: ["--reject-older-than", "60"],
                                                             conf: { "upload_max_age" => "#{SHIP_MAX_AGE}s" })
    begin
      ship_wait_first(col, 2)
      down_at = Time.now
      col.kill
      ship_wait_for("4 profiles dropped as older than #{SHIP_MAX_AGE} s", 120, interval: 0.5) do
        ship_metric(mport, "rubyprofd_upload_dropped_too_old_total") >= 4
      end
      col.restart
      up_at = Time.now
      ship_wait_profiles(col, 2, since: up_at)
      t1 = ship_stop_apps(apps)
      ship_wait_drained(svc, col, t1)
      dropped = ship_metric(mport, "rubyprofd_upload_dropped_too_old_total")
      check(dropped >= 4, "rubyprofd_upload_dropped_too_old_total #{dropped} after #{(up_at - down_at).round} s down " \
                          "with a #{SHIP_MAX_AGE} s max age")
      # (the age is checked before the request: a loaded machine may take a while to send it)
      late = col.index.select { |e| e["arrival"] - (e["time_nanos"] + e["duration_nanos"]) / 1e9 > SHIP_MAX_AGE + 15 }
      check(late.empty?, "sent older than upload_max_age: #{late.map { |e| [e["app"], e["file"]] }}")
      check(ship_metric(mport, "rubyprofd_upload_moved_aside_total").zero?, "profiles refused by the collector")
      # what was not dropped arrived: no gap but the one of the outage
      summary = ship_check(col, apps, "pyroscope", t0: t0, t1: t1, gaps: [[down_at, up_at]])
      "#{dropped.to_i} dropped after #{(up_at - down_at).round} s down; #{summary}"
    ensure
      svc.kill
      col.kill
    end
  end

  # g. 400 and 413: that profile moves into <spool>/rejected/, counted; the next ones arrive.
  def test_ship_rejected
    ship_skip_unless_shipper
    dir = Dir.mktmpdir("rubyprofd-ship-")
    col = StandIn.new(dir)
    mport = 20000 + rand(20000)
    apps = ship_apps
    col.control(mode: "status", status: 400, count: 1, message: "scripted 400")
    svc = ship_service(dir, mport, conf: ship_conf("http://127.0.0.1:#{col.port}", "pyroscope"))
    t0 = Time.now
    begin
      ship_wait_for("deliveries after a 400", 180) { col.index.size >= 2 }
      col.control(mode: "status", status: 413, count: 1)
      ship_wait_for("the 413", 180) { col.state.dig("statuses", "413").to_i == 1 }
      ship_wait_profiles(col, 2)
      t1 = ship_stop_apps(apps)
      ship_wait_drained(svc, col, t1)
      rejected = Dir[File.join(svc.spool, "rejected", "*.json")].sort.map { |j| JSON.parse(File.read(j)) }
      check(rejected.size == 2, "#{rejected.size} profiles in rejected/")
      rejected.each do |meta|
        prof = File.join(svc.spool, "rejected", meta["profile"])
        check(File.size?(prof) == meta["bytes"], "rejected/#{meta["profile"]} is not whole")
      end
      n = ship_metric(mport, "rubyprofd_upload_moved_aside_total")
      check(n == 2, "rubyprofd_upload_moved_aside_total #{n}")
      extra = rejected.group_by { |m| m["service"] }.transform_values { |ms| ms.map { |m| [m["from_ns"], m["until_ns"]] } }
      summary = ship_check(col, apps, "pyroscope", t0: t0, t1: t1, extra: extra)
      delivered = col.index.map { |e| [e["app"], e["time_nanos"]] }
      check(rejected.none? { |m| delivered.include?([m["service"], m["from_ns"]]) }, "a rejected profile was delivered")
      "rejected: #{rejected.map { |m| m["service"] }.inspect}; #{summary}"
    ensure
      svc.kill
      col.kill
    end
  end
end
