# SPDX-License-Identifier: GPL-2.0-only
# The hostile round's harness (root): a service of build/rubyprofd (--stacks ruby|mixed), a
# victim Ruby of nobody's beside it, and one input run as an unprivileged tenant user; while it
# runs, /metrics is scraped every 0.25 s (1 s deadline). Prints the figures: the victim's
# profiles per second of the input, the slowest scrape, the daemon's VmHWM, whether it lived,
# what the refusal counters and the log say.
#   ruby tests/hostile/round.rb BUILD MODE SECONDS -- CMD...   (CMD runs as the tenant, in
#   a scratch directory it owns: $HR_DIR; MODE ruby or mixed)
require "etc"
require "fileutils"
require "json"
require "net/http"
require "socket"
require "timeout"
require "tmpdir"

build, mode, secs, sep, *cmd = ARGV
abort "usage: round.rb BUILD MODE SECONDS -- CMD..." unless sep == "--" && !cmd.empty?
secs = Float(secs)
user = ENV.fetch("HR_USER", "rphostile")
system("id", user, out: File::NULL, err: File::NULL) || system("useradd", "-M", "-s", "/bin/sh", user) || abort("useradd")
pw = Etc.getpwnam(user)
dir = Dir.mktmpdir("hostile-round-")
FileUtils.chmod(0o755, dir)
work = File.join(dir, "tenant")
FileUtils.mkdir_p(work)
FileUtils.chown(pw.uid, pw.gid, work)
vdir = File.join(dir, "victim")
FileUtils.mkdir_p(vdir)
File.write(File.join(vdir, "victim.rb"), "loop { }\n")
FileUtils.chown_R(Etc.getpwnam("nobody").uid, nil, vdir)
port = 20000 + rand(20000)
conf = File.join(dir, "rubyprofd.conf")
File.write(conf, "rule = cmdline ~ tests/hostile/round\\.rb => ignore\n" + (mode == "mixed" ? "stacks = mixed\n" : ""))
log = File.join(dir, "rubyprofd.log")
spool = File.join(dir, "spool")
svc = Process.spawn({ "WATCHDOG_USEC" => "" }, File.join(build, "rubyprofd"), "--config", conf, "--spool-dir", spool,
                    "--interval", "1", "--metrics-address", "127.0.0.1:#{port}", "--rescan-interval", "1", *ENV.fetch("HR_ARGS", "").split,
                    out: [log, "a"], err: [log, "a"])
# the service as root starts it, at the default priority, whatever this harness runs at
Process.setpriority(Process::PRIO_PROCESS, svc, 0)
pids = []
scrape = lambda do
  t0 = Time.now
  body = Timeout.timeout(1) { Net::HTTP.get_response(URI("http://127.0.0.1:#{port}/metrics")).body }
  [body, Time.now - t0]
rescue Timeout::Error, SystemCallError, IOError, EOFError => e
  [nil, Time.now - t0, e]
end
victim_profiles = lambda do
  Dir[File.join(spool, "*.json")].sort.count { |j| JSON.parse(File.read(j))["service"] == "victim" rescue false }
end
begin
  deadline = Time.now + 60
  sleep 0.2 until scrape.call[0] || Time.now > deadline
  pids << Process.spawn("setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--", RbConfig.ruby,
                        File.join(vdir, "victim.rb"), chdir: vdir)
  sleep 0.2 until victim_profiles.call > 0 || Time.now > deadline
  abort "no victim profile: #{File.read(log)}" unless victim_profiles.call > 0
  before, = scrape.call
  v0 = victim_profiles.call
  t0 = Time.now
  pids << Process.spawn({ "HR_DIR" => work, "HOME" => work, "HR_PORT" => port.to_s }, "setpriv", "--reuid=#{pw.uid}", "--regid=#{pw.gid}",
                        "--clear-groups", "--", *cmd, chdir: work, pgroup: true)
  # the input's own set-up (making its files) first: the window starts once it says "ready"
  ready_by = Time.now + 180
  sleep 0.2 until File.exist?(File.join(work, "ready")) || Time.now > ready_by
  puts "input ready after #{(Time.now - t0).round(1)} s#{File.exist?(File.join(work, "ready")) ? "" : " (NOT READY)"}"
  v0 = victim_profiles.call
  t0 = Time.now
  worst = 0
  fails = []
  alive = true
  until Time.now - t0 > secs
    _, took, err = scrape.call
    worst = took if took > worst
    fails << "#{(Time.now - t0).round(1)}s #{err.class}" if err
    if Process.waitpid(svc, Process::WNOHANG)
      alive = false
      break
    end
    sleep 0.25
  end
  after, = scrape.call
  v1 = victim_profiles.call
  times = Dir[File.join(spool, "*.json")].filter_map do |j|
    m = File.mtime(j)
    m if m >= t0 && (JSON.parse(File.read(j))["service"] == "victim" rescue false)
  end.sort
  gap = ([t0] + times + [Time.now]).each_cons(2).map { |a, b| b - a }.max
  hwm = File.read("/proc/#{svc}/status")[/^VmHWM:\s+(\d+)/, 1].to_i rescue -1
  st = File.read("/proc/#{svc}/status") rescue ""
  rss = %w[VmRSS RssAnon RssFile RssShmem].map { |k| "#{k} #{st[/^#{k}:\s+(\d+)/, 1]}" }.join(", ")
  delta = {}
  (after || "").each_line do |l|
    next unless l =~ /^(rubyprofd_(?:refused_objects_total|processes_refused_total|native_elf_refused_total|metrics_clients_\w+|discoveries_\w+|native_unwinds_over_budget_total|discovery_max_seconds|native_elf_bytes|native_unwind_events_total)\S*) (\S+)$/
    name, v = $1, $2.to_f
    b = before.to_s[/^#{Regexp.escape(name)} (\S+)$/, 1].to_f
    delta[name] = v - b if v != b || name.include?("max_seconds") || name.include?("elf_bytes")
  end
  puts format("RESULT mode=%s input=%s: victim %d profiles in %.0f s (longest gap %.1f s); slowest scrape %.3f s%s; VmHWM %d KiB; daemon %s",
              mode, File.basename(cmd.first) + " " + cmd.drop(1).join(" ")[0, 60], v1 - v0, secs, gap, worst, fails.empty? ? "" : " FAILED #{fails.first(3).join(', ')} (#{fails.size})",
              hwm, alive ? "alive" : "DIED")
  delta.each { |k, v| puts "  #{k} #{v}" }
  lines = File.read(log).lines.grep(/warning|error/)
  puts "  now: #{rss} KiB"
  ring = File.readlines("/proc/#{svc}/maps").grep(/bpf-ringbuf|anon_inode:bpf/).sum { |l| a, b = l.split[0].split("-").map { |x| x.to_i(16) }; b - a } rescue 0
  puts "  BPF map mappings: #{ring >> 20} MiB"
  puts "  log: #{lines.size} warning/error lines"
  lines.first(8).each { |l| puts "    " + l.strip[0, 300].inspect }
ensure
  pids.each { |p| Process.kill("-KILL", p) rescue nil; Process.kill("KILL", p) rescue nil }
  pids.each { |p| Process.waitpid(p) rescue nil }
  Process.kill("TERM", svc) rescue nil
  Timeout.timeout(10) { Process.waitpid(svc) } rescue (Process.kill("KILL", svc) rescue nil)
  FileUtils.rm_rf(dir) unless ENV["HR_KEEP"]
end
