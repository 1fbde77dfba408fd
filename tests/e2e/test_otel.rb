# SPDX-License-Identifier: GPL-2.0-only
# The OpenTelemetry process context (OTEP 4719): apps that publish one through a writer written
# in the test from the OTEP alone (scripts/otel_ctx.rb) are named and labelled by what they
# published, read back from the spool's sidecars and with `go tool pprof`; an update by the
# updating protocol is picked up in a later interval; a context of an unknown version is refused,
# counted and logged once, and the app named as without one.
class E2E
  host_only :test_otel_context
  group :service, :test_otel_context

  OTEL_CONF = <<~'CONF'
    frequency = 99
    rule = cmdline ~ /otel_ctx\.rb( |$) => team=otel
    rule = cmdline ~ . => ignore
  CONF

  def test_otel_context
    inst = "inst-#{rand(1 << 30)}"
    # published before the service starts (found by its first scan), and after (at its exec)
    early = start("otel_ctx.rb", "otel-shop", "1.0.0", "staging", inst, "otel-shop-2", "2.0.0", "prod")
    port = 20000 + rand(20000)
    svc = service(["--interval", "2", "--metrics-address", "127.0.0.1:#{port}"], conf: OTEL_CONF)
    begin
      check(svc.wait_note(/READY=1/, 15), "no READY=1 on the notify socket:\n#{svc.log_text}")
      late = start("otel_ctx.rb", "otel-late", "0.9", "dev", "#{inst}-late", "otel-late", "0.9", "dev")
      bad = start("otel_ctx.rb", "otel-bad", "1", "x", "y", "otel-bad", "1", "x",
                  env: { "OTEL_CTX_TEST_VERSION" => "3" })
      svc_wait(svc, "a profile of each published service", 60) do
        g = by_service(svc)
        %w[otel-shop otel-late otel_ctx].all? { |n| g.fetch(n, []).any? }
      end
      # the update, and then two profiles under the new name, the second wholly after it
      go(early)
      updated_path = early.fetch("go").sub(/\.go\z/, ".updated")
      svc_wait(svc, "the update", 20) { File.exist?(updated_path) }
      updated = Integer(File.read(updated_path))
      svc_wait(svc, "two profiles after the update", 60) do
        by_service(svc).fetch("otel-shop-2", []).count { |m, _| Integer(m["from_ns"]) > updated } >= 1
      end
      body = metrics(port).body
      st, = svc.stop("TERM")
      check(st.exitstatus == 0, "SIGTERM: exit #{st.inspect}\n#{svc.log_text}")
      log = svc.log_text
      groups = by_service(svc)

      want = {
        "otel-shop" => [early, "1.0.0", "staging", inst],
        "otel-shop-2" => [early, "2.0.0", "prod", inst],
        "otel-late" => [late, "0.9", "dev", "#{inst}-late"],
      }
      want.each do |name, (facts, version, env, id)|
        entries = groups.fetch(name, [])
        check(entries.any?, "no profile of #{name}: #{groups.keys.inspect}\n#{log}")
        entries.each do |meta, path|
          labels = meta["labels"]
          check(labels["service_name"] == name && labels["service_version"] == version &&
                labels["deployment_environment_name"] == env && labels["team"] == "otel",
                "#{name}: series labels #{labels.inspect}")
          prof = PprofRaw.read(path)
          pids = prof.samples.map { |s| s.labels["pid"] }.uniq
          check(pids == [facts["pid"].to_s], "#{name}: samples of pids #{pids.inspect}")
          ids = prof.samples.map { |s| s.labels["service_instance_id"] }.uniq
          check(ids == [id], "#{name}: service_instance_id labels #{ids.inspect}")
          check(prof.samples.any? { |s| prof.frames(s).any? { |l| method?(l, "otel_work") } },
                "#{name}: no otel_work frame")
        end
      end
      # the old name ends with the interval of the update: none starts after it
      after = groups["otel-shop"].select { |m, _| Integer(m["from_ns"]) > updated }
      check(after.empty?, "otel-shop profiles after the update: #{after.map { |m, _| m["from_ns"] }}")
      # the refused context: named by its script, no OpenTelemetry label, one log line
      # (the late app may be sampled before it published: its first interval is its script's)
      groups.fetch("otel_ctx").each do |meta, path|
        check(!meta["labels"].key?("service_version"), "refused context labelled: #{meta["labels"].inspect}")
        pids = PprofRaw.read(path).samples.map { |s| s.labels["pid"] }.uniq
        check((pids - [bad["pid"].to_s, late["pid"].to_s]).empty?, "otel_ctx: samples of pids #{pids.inspect}")
      end
      lines = log.lines.grep(/pid #{bad["pid"]}: its OpenTelemetry process context is not used \(header\)/)
      check(lines.size == 1, "log lines of the refused context: #{lines.inspect}\n#{log}")
      check(log.include?("pid #{early["pid"]}: service \"otel-shop\" (from its otel)"), "no naming line:\n#{log}")
      read = body[/^rubyprofd_process_contexts_read_total (\d+)/, 1].to_i
      refused = body[/^rubyprofd_process_contexts_refused_total\{reason="header"\} (\d+)/, 1].to_i
      check(read >= 3, "rubyprofd_process_contexts_read_total #{read}")
      check(refused >= 1, "rubyprofd_process_contexts_refused_total{reason=\"header\"} #{refused}")
      others = body.scan(/^rubyprofd_process_contexts_refused_total\{reason="(\w+)"\} (\d+)/)
                   .reject { |r, n| r == "header" || n == "0" }
      check(others.empty?, "other refusals: #{others.inspect}")
      "#{groups.values_at(*want.keys).sum(&:size)} profiles named by their contexts; read #{read}, refused #{refused}"
    ensure
      svc.kill
    end
  end
end
