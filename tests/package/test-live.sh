#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The package on a live systemd: a Debian 12 (or 13) root booted with systemd as PID 1 (boot.sh),
# and in it, as an operator does it: apt install of the .deb, two Ruby apps as units of their own users,
# systemctl enable --now, reload, stop and start, a crash, a configuration error, a hung loop,
# the journal, the mixed and wall modes and the metrics endpoint, shipping to the stand-in
# collector, apt remove and purge.
#
#   tests/package/test-live.sh [BUILD_DIR [SUITE]]
#
# SUITE: bookworm (Debian 12, systemd 252: the default, in make test) or trixie (Debian 13,
# systemd 257: the package built here, on Debian 12, installed there; in the full suite). The
# summary line names the suite: package-live, or package-live-trixie.
#
# Ends with one line: "package-live[-trixie]: N passed, N failed, N skipped"; non-zero on a failure.
# Needs root, systemd-nspawn (systemd-container), go (profiles are read back by go tool pprof,
# on the host) and the Debian archive (the root, cached by tests/e2e/mkroot.sh SUITE-boot,
# and the package's dependencies): without one, or where this machine cannot boot the root, the
# whole test is one skip with the reason. It starts rubyprofd: on a shared machine, run it alone.
set -u
build=${1:-build}
cd "$(dirname "$0")/../.." || exit 1
. tests/package/live-lib.sh # and boot.sh
live_start test-live.sh package-live "$build" "${2:-bookworm}"
mkdir -p "$out"
echo "== $name: the package under a booted systemd ($debian root)"
live_boot "$build" "$out" "$suite"
t0=$SECONDS
sysver=$(in_root systemctl --version | sed -n '1s/^systemd \([0-9]*\).*/\1/p')
spool=$BOOT_ROOT/var/lib/rubyprofd/spool
# rubyprofd's journal from a mark on: jmark prints the number of its entries so far; jsince MARK
# [PRIORITY] their messages after the mark, at PRIORITY or more urgent (a cursor would be the
# usual mark, but here --after-cursor with -u missed the daemon's own lines); jhas MARK PATTERN
# [PRIORITY]: one matches (journald takes a moment to store a line: poll it).
journal() { in_root journalctl -u rubyprofd -o json --no-pager; }
jmark() { journal | wc -l; }
jsince() {
	journal | tail -n +$(($1 + 1)) | python3 -c '
import json, sys
top = int(sys.argv[1])
for line in sys.stdin:
    e = json.loads(line)
    if int(e.get("PRIORITY", 6)) <= top:
        print(e.get("MESSAGE"))' "${2:-7}"
}
jhas() { jsince "$1" "${3:-7}" | grep -q -- "$2"; }
# Sidecars of the spool (host paths), oldest first; of one service with a name.
sidecars() { ls "$spool"/*-"${1:-*}"-[0-9]*.json 2>/dev/null | sort; }
count() { sidecars "$@" | wc -l; }
newer_than() { [ "$(count "$1")" -gt "$2" ]; }

# ---- 1. apt install ./rubyprofd_*.deb: dependencies from the archive, installed disabled ---------
printf '' >"$out/apt.log"
if ! apt_install "$out" "$out/apt.log" "$build/$deb"; then
	if [ -n "$apt_skip" ]; then
		skipped "live systemd" "$apt_why"
	elif [ "$suite" = trixie ]; then
		# the package's Depends name Debian 12's libraries; Debian 13's t64 renames provide
		# those names on amd64: where they do not, the package must be built on Debian 13
		bad "apt install ./$deb (built on Debian 12) in $debian" "$apt_why; a user builds the package on $debian instead (make deb there: its Depends then name that release's libraries)"
	else
		bad "apt install ./$deb" "$apt_why"
	fi
	finish
fi
ok "apt install ./$deb: $(grep -c '^Setting up' "$out/apt.log") packages set up"
if [ "$suite" = trixie ]; then
	# Depends as dpkg-shlibdeps wrote them on Debian 12, and what satisfies each in Debian 13
	sat=
	for dep in $(dpkg-deb -f "$build/$deb" Depends | sed 's/([^)]*)//g; s/,/ /g'); do
		by=$(in_root dpkg-query -W -f='${Package} ${Provides}\n' | awk -v d="$dep" '$1 == d || index(" " $0 ",", " " d " ") || index(" " $0 ",", " " d ",") { print $1; exit }')
		sat+="$dep:${by:-none} "
	done
	check "Debian 12's Depends met in $debian (the t64 libraries provide the old names): $sat" \
		sh -c "! echo '$sat' | grep -q ':none'"
fi
check "installed disabled and not started" test "$(in_root systemctl is-enabled rubyprofd)/$(prop rubyprofd ActiveState)" = disabled/inactive

# ---- 2. Ruby apps, each a unit of its own user ------------------------------------------------------
mkdir -p "$BOOT_ROOT/opt/live"
cp tests/package/live/app.rb "$BOOT_ROOT/opt/live/app.rb"
for app in shop jobs; do
	in_root useradd --system --no-create-home --shell /usr/sbin/nologin "$app"
	printf '[Unit]\nDescription=the %s app\n[Service]\nUser=%s\nExecStart=/usr/bin/ruby /opt/live/app.rb %s\n' \
		"$app" "$app" "$app" >"$BOOT_ROOT/etc/systemd/system/$app.service"
done
in_root systemctl daemon-reload
in_root systemctl start shop
shop_pid=$(prop shop MainPID)
check "shop.service runs as user shop (pid $shop_pid in the root)" test "$(in_root ps -o user= -p "$shop_pid")" = shop

# ---- 3. enable --now: active once READY=1, STATUS=, a profile per app per interval -----------------
# An operator's edit: short intervals and a higher frequency, so that the test takes minutes.
printf '\n# the live test\ninterval = 3\nfrequency = 49\n' >>"$BOOT_ROOT$conf"
in_root systemctl enable --now rubyprofd >"$out/enable.log" 2>&1
# At once, with no wait: Type=notify made enable --now return after READY=1, which the daemon
# sends once its sampler is attached, so its perf events are open (one per CPU) already.
main=$(prop rubyprofd MainPID)
ncpu=$(nproc --all)
nperf=$(in_root find "/proc/$main/fd" -lname 'anon_inode:\[perf_event\]' | wc -l)
check "enable --now returns active (Type=$(prop rubyprofd Type)) with the sampler attached ($nperf perf events, $ncpu CPUs)" \
	test "$(prop rubyprofd ActiveState)/$(prop rubyprofd Type)" = active/notify -a "$nperf" -ge "$ncpu"
check "systemctl status shows the STATUS= line, shop (there before the start) counted at READY=1" grep -q 'Status: "profiling 1 Ruby process at 49 Hz"' <<<"$(in_root systemctl status --no-pager rubyprofd)"
# CPU under busy tenants: the unit's weight and nice as systemd shows them, the nice the kernel
# runs the daemon at, and the weight of its cgroup (cgroup v2's cpu.weight, or v1's cpu.shares:
# systemd's 1024 per 100 of weight) where a cpu controller is there
cgw() {
	local rel v
	rel=$(in_root awk -F: '$1 == "0" { u = $3 } $2 ~ /(^|,)cpu(,|$)/ { c = $3 } END { print c ? c : u }' "/proc/$main/cgroup")
	# a hybrid host's nspawn root has the v1 controllers read-only, from the root's own cgroup:
	# none of the unit's own
	if [ "${rel##*/}" != rubyprofd.service ]; then
		echo "no cpu controller for the unit (its cpu cgroup is ${rel:-none})"
		return
	fi
	for v in "/sys/fs/cgroup$rel/cpu.weight" "/sys/fs/cgroup/cpu$rel/cpu.shares" "/sys/fs/cgroup/cpu,cpuacct$rel/cpu.shares"; do
		if in_root test -f "$v"; then
			echo "${v##*/}=$(in_root cat "$v")"
			return
		fi
	done
	echo "no cpu controller"
}
cpu_ok() {
	case "$1" in
	"CPUWeight=200 Nice=-5/nice=-5/cpu.weight=200" | "CPUWeight=200 Nice=-5/nice=-5/cpu.shares=2048") return 0 ;;
	"CPUWeight=200 Nice=-5/nice=-5/no cpu controller"*) return 0 ;;
	*) return 1 ;;
	esac
}
cpu=$(in_root systemctl show -p CPUWeight,Nice rubyprofd | xargs)/nice=$(in_root ps -o ni= -p "$main" | xargs)/$(cgw)
check "CPU under busy tenants: $cpu" cpu_ok "$cpu"
check "a profile of shop in the spool" poll 60 newer_than shop 0
in_root systemctl start jobs
check "a profile of jobs, started after the service" poll 60 newer_than jobs 0
# Two whole intervals after the first of jobs: each has one profile of each app.
n=$(count jobs)
poll 60 newer_than jobs $((n + 1))
stamps=$(sidecars jobs | tail -n 2 | sed 's/.*\/\([0-9TZ.]*\)-jobs-0.json/\1/')
each=
for s in $stamps; do
	each+="$s:$(ls "$spool/$s"-*.json | sed 's/.*Z-\(.*\)-[0-9]*.json/\1/' | sort | xargs) "
done
check "each interval, one profile per app, named by its unit: $each" \
	test "$(grep -o 'jobs shop' <<<"$each" | wc -l)" = 2
check "sidecars name the service: $(json "$(sidecars shop | tail -n 1)" 'd["service"]')" \
	test "$(json "$(sidecars shop | tail -n 1)" 'd["service"]')" = shop
modes=$(stat -c '%a %U' "$spool"/* | sort -u | xargs)
check "spool files are 0640 root: $modes" test "$modes" = "640 root"
prof=$(sidecars shop | tail -n 1 | sed 's/json$/pb.gz/')
pprof -top "$prof" >"$out/shop-top.txt"
check "go tool pprof reads shop's profile: Object#shop_work, no jobs_work" \
	sh -c "grep -q 'Object#shop_work' '$out/shop-top.txt' && ! grep -q jobs_work '$out/shop-top.txt'"
pprof -tags "$prof" >"$out/shop-tags.txt"
check "its pid label is shop.service's MainPID in the root ($shop_pid)" \
	sh -c "grep -A1 '^ *pid:' '$out/shop-tags.txt' | grep -qE '\\): $shop_pid\$'"
# the daemon opens a process's files with openat2(RESOLVE_IN_ROOT): a sandbox that denies it
# leaves only /proc/PID/map_files (and no separate debug files)
ruby_line=$(jsince 0 | grep "pid $shop_pid: Ruby ")
ruby_line=${ruby_line%%$'\n'*}
check "libruby read at its path in the app's root: $ruby_line" \
	test -n "$ruby_line" -a "${ruby_line/map_files/}" = "$ruby_line"
check "jobs (started later) is profiled: Object#jobs_work" \
	grep -q 'Object#jobs_work' <<<"$(pprof -top "$(sidecars jobs | tail -n 1 | sed 's/json$/pb.gz/')")"

# ---- 4. reload: a new label reaches the next sidecar; a broken file is refused ----------------------
printf 'label = team=live\n' >>"$BOOT_ROOT$conf"
# what an operator checks first: the file valid, the label in effect under the line it is on
label_line=$(wc -l <"$BOOT_ROOT$conf")
has_text() { [[ "$1" == *"$2"* ]]; }
check "rubyprofd --check-config: valid, the label under its origin ($conf:$label_line)" \
	has_text "$(in_root rubyprofd --check-config 2>/dev/null)" "# $conf:$label_line"$'\n'"label = team=live"
# the label is in force from the daemon's "configuration reloaded" line: sidecars written after it
# have it (counted before the reload, an interval that ended while ExecReload ran its check
# would be taken for the next one)
mark=$(jmark)
check "systemctl reload (a label added)" in_root systemctl reload rubyprofd
poll 30 jhas "$mark" 'configuration reloaded'
n=$(count shop)
poll 60 newer_than shop "$n"
check "the next sidecar has the label: $(json "$(sidecars shop | sed -n "$((n + 1))p")" 'd["labels"]')" \
	test "$(json "$(sidecars shop | sed -n "$((n + 1))p")" 'd["labels"].get("team")')" = live
cp "$BOOT_ROOT$conf" "$out/good.conf"
printf 'spool_max_age = soon\n' >>"$BOOT_ROOT$conf"
bad_line=$(wc -l <"$BOOT_ROOT$conf")
mark=$(jmark)
if in_root systemctl reload rubyprofd >"$out/reload.log" 2>&1; then
	bad "systemctl reload of a broken file fails" "it succeeded"
else
	ok "systemctl reload of a broken file fails"
fi
check "the journal names $conf:$bad_line at priority err" \
	poll 10 jhas "$mark" "$conf:$bad_line: spool_max_age" 3
n=$(count shop)
poll 60 newer_than shop "$n"
last=$(sidecars shop | tail -n 1)
check "the running configuration stays (pid $main, 49 Hz, the label)" \
	test "$(prop rubyprofd MainPID)/$(json "$last" 'd["sample_rate"]')/$(json "$last" 'd["labels"].get("team")')" = "$main/49/live"
cp "$out/good.conf" "$BOOT_ROOT$conf"

# ---- 5. stop, start, a crash, a configuration error, a hung loop ----------------------------------
n=$(count shop)
before=$(ls "$spool" | wc -l)
t_stop=$(date +%s%N)
in_root systemctl stop rubyprofd
last=$(sidecars shop | tail -n 1)
took=$(json "$last" '(d["until_ns"] - d["from_ns"]) / 1e9')
check "systemctl stop writes the interval in progress (${took} s of 3)" \
	test "$(count shop)" -gt "$n" -a "$(json "$last" "int(d['until_ns'] >= $t_stop)")" = 1
in_root systemctl start rubyprofd
check "start again keeps the spool ($before files before the stop)" test "$(ls "$spool" | wc -l)" -ge "$before"

main=$(prop rubyprofd MainPID)
restarts=$(prop rubyprofd NRestarts)
t_kill=$(python3 -c 'import time; print(int(time.monotonic() * 1e6))')
in_root kill -SEGV "$main"
restarted() { [ "$(prop rubyprofd ActiveState)" = active ] && [ "$(prop rubyprofd MainPID)" != "$main" ]; }
if poll 60 restarted; then
	# CLOCK_MONOTONIC is the host's inside too (no time namespace): the new process started
	# RestartSec (5 s) after the signal
	gap=$((($(prop rubyprofd ExecMainStartTimestampMonotonic) - t_kill) / 1000))
	check "kill -SEGV: restarted (NRestarts $restarts -> $(prop rubyprofd NRestarts)) $gap ms later (RestartSec=$(prop rubyprofd RestartUSec))" \
		test "$(prop rubyprofd NRestarts)" -gt "$restarts" -a "$gap" -ge 4990
	n=$(count shop)
	check "profiling resumes after the crash" poll 60 newer_than shop "$n"
else
	bad "kill -SEGV: restarted" "state $(prop rubyprofd ActiveState), pid $(prop rubyprofd MainPID)"
fi

printf 'log_level = loud\n' >>"$BOOT_ROOT$conf"
mark=$(jmark)
in_root systemctl restart rubyprofd >/dev/null 2>&1
settled() { case "$(prop rubyprofd ActiveState)" in failed | inactive | active) return 0 ;; *) return 1 ;; esac; }
poll 60 settled
# With Restart=on-failure a restart would be scheduled at once (activating, auto-restart): the
# state is final here, and the journal says why.
state=$(prop rubyprofd ActiveState)/$(prop rubyprofd ExecMainStatus)
poll 10 jhas "$mark" 'Failed with result'
check "a configuration error: exit 2, failed, not restarted ($state)" \
	test "$state/$(jsince "$mark" | grep -c 'Scheduled restart')" = failed/2/0
cp "$out/good.conf" "$BOOT_ROOT$conf"

mkdir -p "$BOOT_ROOT/etc/systemd/system/rubyprofd.service.d"
# a short watchdog and abort, so that the test waits seconds, not 40
printf '[Service]\nWatchdogSec=2s\nTimeoutAbortSec=2s\n' >"$BOOT_ROOT/etc/systemd/system/rubyprofd.service.d/watchdog.conf"
in_root systemctl daemon-reload
in_root systemctl reset-failed rubyprofd
in_root systemctl start rubyprofd
main=$(prop rubyprofd MainPID)
mark=$(jmark)
in_root kill -STOP "$main"
if poll 60 restarted; then
	check "SIGSTOP: the watchdog restarts it" poll 10 jhas "$mark" 'Watchdog timeout'
else
	bad "SIGSTOP: the watchdog restarts it" "state $(prop rubyprofd ActiveState), pid $(prop rubyprofd MainPID)"
fi
rm -r "$BOOT_ROOT/etc/systemd/system/rubyprofd.service.d"
in_root systemctl daemon-reload

# ---- 6. the journal: each line at its priority ------------------------------------------------------
journal >"$out/journal.json"
errs=$(in_root journalctl -u rubyprofd -p err -o cat --no-pager | grep '^rubyprofd: ')
check "journalctl -p err: the configuration's errors, no info line: $(tr '\n' '|' <<<"$errs")" \
	test "$(grep -c "rubyprofd.conf:[0-9]*: spool_max_age: " <<<"$errs")/$(grep -c "rubyprofd.conf:[0-9]*: log_level: " <<<"$errs")/$(grep -c ': info: ' <<<"$errs")" = 1/1/0
check "info lines at priority info" \
	grep -q 'rubyprofd: info: profiling every' <<<"$(in_root journalctl -u rubyprofd -p info..info -o cat --no-pager)"

# ---- 7. shipping to the stand-in collector on the host ----------------------------------------------
# The collector (tests/collector/collector.py: Pyroscope's /ingest) listens on the host's loopback,
# which the root shares; the URL names the host as an operator writes one (localhost: resolved
# through the root's /etc/hosts by libcurl, under the unit's RestrictAddressFamilies).
col=$(realpath -m "$out/collector")
rm -rf "$col" && mkdir -p "$col"
python3 tests/collector/collector.py --store "$col/store" --port 0 --port-file "$col/ports" \
	>"$col/log" 2>&1 &
col_pid=$!
if poll 60 test -s "$col/ports"; then
	cport=$(json "$col/ports" 'd["port"]')
	# shop's entries in the collector's index (one JSON line per stored profile) that begin at
	# or after SINCE (ns)
	shipped() { python3 -c '
import json, sys
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e["app"] == "shop" and e["time_nanos"] >= int(sys.argv[2]):
        print(e["file"], e["protocol"], e["labels"].get("team"), e["sample_rate"], e["samples"])' \
		"$col/store/index.jsonl" "$1" 2>/dev/null; }
	# the second: a whole interval
	has_shipped() { [ "$(shipped "$1" | wc -l)" -ge 2 ]; }
	# not restarted_with: the shipper empties the spool as it goes
	cp "$out/good.conf" "$BOOT_ROOT$conf"
	printf 'upload_url = http://localhost:%s\nupload_protocol = pyroscope\n' "$cport" >>"$BOOT_ROOT$conf"
	backlog=$(count shop)
	t_ship=$(date +%s%N)
	if in_root systemctl restart rubyprofd && poll 60 has_shipped "$t_ship"; then
		read -r file proto team rate nsamples <<<"$(shipped "$t_ship" | sed -n 2p)"
		check "shipped from the root: the collector has shop's second profile after the restart ($proto, team=$team, ${rate} Hz, $nsamples stacks; $(shipped 0 | wc -l) of shop in all, $backlog in the spool before)" \
			test "$proto/$team/$rate" = pyroscope/live/49 -a "$nsamples" -gt 0
		pprof -top "$col/store/$file" >"$out/shipped-top.txt"
		check "go tool pprof reads what the collector received: Object#shop_work, no jobs_work" \
			sh -c "grep -q 'Object#shop_work' '$out/shipped-top.txt' && ! grep -q jobs_work '$out/shipped-top.txt'"
	else
		bad "shipping to the collector" "not two profiles of shop after 60 s: $(in_root journalctl -u rubyprofd -n 3 -o cat); collector: $(tail -n 3 "$col/log")"
	fi
else
	bad "shipping to the collector" "the collector did not start: $(tail -n 3 "$col/log")"
fi
kill "$col_pid" 2>/dev/null
wait "$col_pid" 2>/dev/null
# (the next restart, below, ends the shipping: the spool fills again for apt remove's check)

# ---- 8. stacks = mixed with the metrics endpoint, then clock = wall --------------------------------
# the root shares the host's network: a free port of the host's, read back from the host
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# restarted_with KEY=VALUE...: the configuration plus those lines, the service restarted, and the
# first whole interval of shop after it; prints its sidecar
restarted_with() {
	cp "$out/good.conf" "$BOOT_ROOT$conf"
	printf '%s\n' "$@" >>"$BOOT_ROOT$conf"
	# the test's own restarts are not the unit's crash loop: StartLimitBurst=5 in 10 minutes
	# would stop the sixth (systemd 257 reached it here, with the hostile round's restart)
	in_root systemctl reset-failed rubyprofd
	in_root systemctl restart rubyprofd || return 1
	local n
	n=$(count shop)
	poll 60 newer_than shop $((n + 1)) || return 1
	sidecars shop | sed -n "$((n + 2))p"
}
if side=$(restarted_with "stacks = mixed" "metrics_address = 127.0.0.1:$port"); then
	prof=${side%.json}.pb.gz
	pprof -raw "$prof" >"$out/mixed-raw.txt"
	check "stacks = mixed: native frames of libruby and libc under the unit's sandbox" \
		sh -c "grep -q 'libruby-3\.[0-9]*\.so' '$out/mixed-raw.txt' && grep -q 'libc.so.6' '$out/mixed-raw.txt'"
	curl -s "http://127.0.0.1:$port/metrics" >"$out/metrics.txt"
	check "the metrics endpoint answers: $(grep '^rubyprofd_samples_total' "$out/metrics.txt" | xargs)" \
		grep -qE '^rubyprofd_samples_total\{process="ruby"\} [1-9]' "$out/metrics.txt"
else
	bad "stacks = mixed" "no profile after the restart: $(prop rubyprofd ActiveState); $(in_root journalctl -u rubyprofd -n 3 -o cat)"
fi
if side=$(restarted_with "clock = wall"); then
	prof=${side%.json}.pb.gz
	pprof -top "$prof" >"$out/wall-top.txt"
	# the app sleeps four fifths of its time: wall time shows it, CPU time cannot
	sleep_pct=$(awk '/Kernel#sleep/ { sub(/%/, "", $2); print int($2) }' "$out/wall-top.txt")
	check "clock = wall: Kernel#sleep holds ${sleep_pct:-no}% of shop's wall time (it sleeps 80%)" \
		test "${sleep_pct:-0}" -ge 50
else
	bad "clock = wall" "no profile after the restart: $(prop rubyprofd ActiveState); $(in_root journalctl -u rubyprofd -n 3 -o cat)"
fi

# ---- 9. a tenant's hostile inputs against the unit -------------------------------------------------
# Three of tests/hostile/'s inputs at once for 15 s, each a unit of the root's own unprivileged
# user (tenant), against the service in the default configuration with its metrics endpoint: an
# exec storm (two forkers of /bin/true), 100 slow clients of the endpoint (idle, trickling,
# half-open), a Ruby renaming itself and its threads to escapes and invalid UTF-8 without pause.
# shop (user shop) is the victim: a profile every interval; /metrics answers within 1 s every
# 0.25 s from the host; the daemon is the same process, not restarted.
in_root useradd --system --no-create-home --shell /usr/sbin/nologin tenant
mkdir -p "$BOOT_ROOT/opt/tenant/work"
cp tests/hostile/default_inputs.sh tests/hostile/slowclients.rb "$BOOT_ROOT/opt/tenant/"
gcc -O2 -o "$BOOT_ROOT/opt/tenant/storm" tests/hostile/execstorm.c
in_root chown tenant /opt/tenant/work
if restarted_with "metrics_address = 127.0.0.1:$port" >/dev/null; then
	main=$(prop rubyprofd MainPID)
	restarts=$(prop rubyprofd NRestarts)
	n=$(count shop)
	tenant() { in_root systemd-run --quiet --collect --unit="tenant-$1" --uid=tenant --working-directory=/opt/tenant/work \
		--setenv=HR_DIR=/opt/tenant/work --setenv=HR_PORT="$port" "${@:2}"; }
	tenant storm /opt/tenant/storm 60
	tenant clients /bin/sh /opt/tenant/default_inputs.sh clients
	tenant names /bin/sh /opt/tenant/default_inputs.sh names
	took=() late=0
	end=$((SECONDS + 15))
	while [ $SECONDS -lt $end ]; do
		took+=("$(curl -s -o /dev/null -w '%{time_total}' --max-time 1 "http://127.0.0.1:$port/metrics")") || late=$((late + 1))
		sleep 0.25
	done
	scrapes=${#took[@]}
	slowest=$(printf '%s\n' "${took[@]}" | sort -g | tail -n 1)
	active=$(in_root systemctl is-active tenant-storm tenant-clients tenant-names | xargs)
	curl -s --max-time 1 "http://127.0.0.1:$port/metrics" >"$out/hostile-metrics.txt"
	in_root systemctl stop tenant-storm tenant-clients tenant-names 2>/dev/null
	shops=$(($(count shop) - n))
	evicted=$(awk '/^rubyprofd_metrics_clients_(evicted|timed_out)_total / { s += $2 } END { print s + 0 }' "$out/hostile-metrics.txt")
	execs=$(awk '/^rubyprofd_process_events_total\{event="exec"\} / { print $2 }' "$out/hostile-metrics.txt")
	check "the tenant's inputs ran (${active// //}; slow clients dropped $evicted, exec events ${execs:-?})" \
		test "$active" = "active active active" -a "$evicted" -gt 0
	check "under them: shop profiled every interval ($shops profiles of 3 s in 15 s)" test "$shops" -ge 4
	check "under them: /metrics within 1 s ($scrapes scrapes, $late late, slowest $slowest s)" test "$late" -eq 0
	check "under them: not restarted (NRestarts $restarts -> $(prop rubyprofd NRestarts), pid $main -> $(prop rubyprofd MainPID))" \
		test "$(prop rubyprofd NRestarts)/$(prop rubyprofd MainPID)/$(prop rubyprofd ActiveState)" = "$restarts/$main/active"
else
	bad "a tenant's hostile inputs" "no profile after the restart: $(prop rubyprofd ActiveState); $(in_root journalctl -u rubyprofd -n 3 -o cat)"
fi

# ---- 10. apt remove keeps the state; apt purge removes unit, configuration and state ---------------
n=$(ls "$spool" | wc -l)
in_root apt-get remove -y rubyprofd >"$out/remove.log" 2>&1
# (the stop writes the interval in progress: one more profile, or none when shop used no CPU)
state="$(prop rubyprofd ActiveState), unit $(test -e "$BOOT_ROOT/lib/systemd/system/rubyprofd.service" && echo left || echo gone), $(test -f "$BOOT_ROOT$conf" && echo conf kept || echo conf gone)"
check "apt remove: $state, $n spool files before, $(ls "$spool" | wc -l) after" \
	test "$state" = "inactive, unit gone, conf kept" -a "$n" -gt 0 -a "$(ls "$spool" | wc -l)" -ge "$n"
in_root apt-get purge -y rubyprofd >"$out/purge.log" 2>&1
left=
for f in /lib/systemd/system/rubyprofd.service /etc/rubyprofd /var/lib/rubyprofd /usr/sbin/rubyprofd \
	/etc/systemd/system/multi-user.target.wants/rubyprofd.service; do
	[ -e "$BOOT_ROOT$f" ] && left+=" $f"
done
check "apt purge: unit, configuration and state gone${left:+ (left:$left)}" test -z "$left"
echo "    systemd $sysver; $((SECONDS - t0)) s from the boot"
finish
