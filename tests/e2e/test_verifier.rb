# SPDX-License-Identifier: GPL-2.0-only
# The BPF programs load with room to spare in every mode. The kernel's verifier explores at most
# 1,000,000 instructions of a program (BPF_COMPLEXITY_LIMIT_INSNS), and how many it explores for
# the same object differs between kernels, even between two builds of one version: on a later
# build of this VM's 6.18.44 the walk as it was at fe36ac1 took the verifier past the limit (every
# program refused, "Argument list too long") where the build before had loaded it. So the
# figure each program took (bpf_prog_info.verified_insns, which the daemon logs at -vv) must stay
# well below the limit: at most VERIFIER_SHARE of it, the margin for a kernel that explores up to
# that much more. Measured here (kernel 6.18.44): Ruby stacks 19.5 %, mixed 21.3 %, wall clock
# 50.4 % (the syscall program and the 6.1 iterator alike); before the walk was reworked, over 100 %.
class E2E
  host_only :test_verifier_margin

  VERIFIER_LIMIT = 1_000_000
  VERIFIER_SHARE = 0.75

  def test_verifier_margin
    modes = { "cpu" => [[], {}], "mixed" => [%w[--stacks mixed], {}], "wall" => [%w[--clock wall], {}],
              "wall, 6.1 iterator" => [%w[--clock wall], { "RP_WALL_ITER" => "1" }] }
    seen = modes.map do |name, (flags, env)|
      _, _, stderr, = rubyprofd("-vv", "--duration", "1", *flags, "--", "ruby", "-e", "sleep 0.5", daemon_env: env)
      progs = stderr.scan(/BPF program (\w+): the verifier explored (\d+) instructions/).to_h { |p, n| [p, Integer(n)] }
      check(progs.key?("rp_on_sample"), "#{name}: no verifier figure for rp_on_sample at -vv:\n#{stderr}")
      wall = name.start_with?("wall")
      check(!wall || progs.key?(env.empty? ? "rp_wall_run" : "rp_wall"), "#{name}: no figure for the wall-clock program:\n#{stderr}")
      progs.each do |p, n|
        check(n <= VERIFIER_SHARE * VERIFIER_LIMIT,
              format("%s: the verifier explored %d instructions of %s, %.1f %% of its limit (at most %.0f %% leaves a margin)",
                     name, n, p, 100.0 * n / VERIFIER_LIMIT, 100 * VERIFIER_SHARE))
      end
      top = progs.max_by { |_, n| n }
      format("%s %s %.1f %%", name, top[0], 100.0 * top[1] / VERIFIER_LIMIT)
    end
    seen.join(", ")
  end
end
