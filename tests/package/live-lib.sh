# SPDX-License-Identifier: GPL-2.0-only
# Sourced by the tests of the package under a live systemd (tests/package/test-live.sh,
# test-upgrade.sh), with boot.sh (it sources it): their counters and checks, and the steps they share.
#
#   live_suite SUITE PREFIX     SUITE bookworm or trixie: sets name (PREFIX or PREFIX-trixie,
#                               the summary line's), debian ("Debian 12"...), cgroups (boot_root's
#                               third argument); 2 if unknown
#   live_start SCRIPT PREFIX BUILD SUITE   live_suite, or SCRIPT's usage error (exit 2); sets
#                               suite, out (BUILD/name) and conf (the package's configuration)
#   ok/bad/skipped NAME [WHY]   one PASS/FAIL/SKIP line, counted
#   finish                      the summary line "NAME: N passed, N failed, N skipped"; exits
#   check NAME COMMAND...       PASS when COMMAND succeeds, else FAIL with its (short) output
#   poll SECONDS COMMAND...     COMMAND until it succeeds, at most SECONDS; its status
#   live_boot BUILD OUT         root, tools, make deb (not when RP_DEB_MADE says tests/run-all.sh
#                               made BUILD's .deb already), the cached root (mkroot.sh
#                               SUITE-boot), booted (boot_root); sets deb, version; on any
#                               failure or skip, the summary and exit
#   apt_install OUT LOG DEB [APT_OPTION...]   apt-get install ./DEB (copied into the root's
#                               /root) inside, apt-get update first if the lists are stale; 0
#                               if DEB's version is then installed; 1 with the reason in
#                               apt_why, apt_skip=1 when the archive could not serve it
#   prop UNIT PROPERTY          systemctl show's value inside
#   json FILE EXPR              EXPR of the JSON document d in FILE
#   pprof ARGS...               go tool pprof on the host

. tests/package/boot.sh

pass=0 fail=0 skip=0 name= debian= cgroups= deb= version=
live_suite() {
	case "$1" in
	bookworm) name=$2 debian="Debian 12" cgroups= ;;
	trixie) name=$2-trixie debian="Debian 13" cgroups=unified ;;
	*) return 2 ;;
	esac
}
live_start() {
	suite=$4
	live_suite "$suite" "$2" || { echo "$1: SUITE is bookworm or trixie" >&2; exit 2; }
	out="$3/$name"
	conf=/etc/rubyprofd/rubyprofd.conf
}
ok() { echo "  PASS $1"; pass=$((pass + 1)); }
bad() { echo "  FAIL $1: $2"; fail=$((fail + 1)); }
skipped() { echo "  SKIP $1: $2"; skip=$((skip + 1)); }
finish() {
	echo "$name: $pass passed, $fail failed, $skip skipped"
	[ "$fail" -eq 0 ]
	exit
}
check() {
	local what=$1 out
	shift
	if out=$("$@" 2>&1); then ok "$what"; else bad "$what" "$(printf '%s' "$out" | tail -n 5)"; fi
}
poll() {
	local end=$((SECONDS + $1))
	shift
	until "$@" >/dev/null 2>&1; do
		[ $SECONDS -ge $end ] && return 1
		sleep 0.2
	done
}

live_boot() {
	local build=$1 out=$2 suite=$3 tool cached t0
	version=$(sed -n 's/^VERSION := //p' Makefile)
	deb="rubyprofd_${version}-1_$(dpkg --print-architecture).deb"
	[ "$(id -u)" -eq 0 ] || { skipped "live systemd" "needs root (systemd-nspawn, nsenter)"; finish; }
	for tool in systemd-nspawn nsenter go curl; do
		command -v "$tool" >/dev/null || { skipped "live systemd" "$tool is missing (make deps installs it)"; finish; }
	done
	t0=$SECONDS
	if [ -n "${RP_DEB_MADE:-}" ] && [ -f "$build/$deb" ]; then
		# tests/run-all.sh made it from this tree (make deb, beside the e2e tests), once for
		# every live suite of its run
		echo "    make deb: made by tests/run-all.sh ($RP_DEB_MADE)"
	elif ! make --no-print-directory BUILD="$build" deb >"$out/deb.log" 2>&1; then
		bad "make deb" "$(tail -n 5 "$out/deb.log")"
		finish
	else
		echo "    make deb: $((SECONDS - t0)) s"
	fi
	cached=$(tests/e2e/mkroot.sh "$suite-boot" 2>"$out/mkroot.err")
	case $? in
	0) ;;
	77) skipped "live systemd" "$(cat "$out/mkroot.err")"; finish ;;
	*) bad "$debian root" "mkroot.sh $suite-boot: $(cat "$out/mkroot.err")"; finish ;;
	esac
	trap halt_root EXIT
	t0=$SECONDS
	# Debian 13 as its hosts run it: cgroup2 alone (boot.sh says why)
	if ! boot_root "$cached" "$(mktemp -d "$(dirname "$cached")/live.XXXXXX")" "$cgroups"; then
		skipped "live systemd" "this machine cannot boot the $debian root: $BOOT_WHY"
		finish
	fi
	ok "booted: $(in_root systemctl --version | head -n 1) is PID 1 of the $debian root, $(in_root systemctl is-system-running) in $((SECONDS - t0)) s, cgroups: $(in_root stat -f -c %T /sys/fs/cgroup | sed 's/^cgroup2fs$/unified (cgroup2)/; s/^tmpfs$/hybrid (v1 and cgroup2)/')"
}

apt_why= apt_skip=
apt_install() {
	local out=$1 log=$2 file=$3 want base
	shift 3
	base=${file##*/}
	want=$(dpkg-deb -f "$file" Version)
	cp "$file" "$BOOT_ROOT/root/$base"
	apt_why= apt_skip=
	inst() { in_root sh -c "cd /root && apt-get install -y $* ./$base" >>"$log" 2>&1; }
	if ! inst "$@" && grep -qE 'Failed to fetch|Unable to fetch' "$log"; then
		# the cached root's package lists are old: the archive has moved on
		in_root apt-get -q -o Acquire::Languages=none update >>"$log" 2>&1 && inst "$@"
	fi
	[ "$(in_root dpkg-query -W -f='${db:Status-Status} ${Version}' rubyprofd 2>/dev/null)" = "installed $want" ] && return 0
	if grep -qE 'Failed to fetch|Temporary failure resolving|Could not resolve' "$log"; then
		apt_skip=1 apt_why="the archive cannot serve the dependencies: $(grep -E '^E:' "$log" | tail -n 1)"
	else
		apt_why=$(grep -E '^(E:| [^ ].*Depends:)' "$log" | tail -n 5)
		[ -n "$apt_why" ] || apt_why=$(tail -n 5 "$log")
	fi
	return 1
}

prop() { in_root systemctl show -p "$2" --value "$1"; }
json() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@"; }
pprof() { (cd "$out" && go tool pprof "$@" 2>&1); }
