#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The upgrade under a live systemd: in a booted Debian root (boot.sh), a package of this tree
# with a lower version installed by apt, its conffile edited, the service running (then, in a
# second round, enabled but stopped), profiles in the spool; then apt install of the current
# .deb, as an operator upgrades. The edited conffile is kept (dpkg's prompt answered as apt's
# default answer does: keep it, the package's new file beside it as .dpkg-dist), the spool
# survives, and the package scripts restart the service only where it was running.
#
#   tests/package/test-upgrade.sh [BUILD_DIR [SUITE]]     SUITE: bookworm (default) or trixie
#
# Ends with one line: "package-upgrade[-trixie]: N passed, N failed, N skipped"; non-zero on a
# failure. Needs what test-live.sh needs; without it, or where this machine cannot boot the
# root, the whole test is one skip with the reason. It starts rubyprofd: run it alone.
#
# The earlier package is the current one repacked (dpkg-deb) with the version VERSION~prev-1,
# lower than VERSION-1, and a default configuration file that differs by one comment line: an
# upgrade then ships a changed conffile over an edited one, the case where dpkg asks. (Building
# it again with dpkg-buildpackage would give the same files and take a minute.)
set -u
build=${1:-build}
cd "$(dirname "$0")/../.." || exit 1
. tests/package/live-lib.sh # and boot.sh
live_start test-upgrade.sh package-upgrade "$build" "${2:-bookworm}"
rm -rf "$out" && mkdir -p "$out"
echo "== $name: an upgrade from an earlier package under a booted systemd ($debian root)"
live_boot "$build" "$out" "$suite"
t0=$SECONDS

# ---- the earlier package ----------------------------------------------------------------------
new=$build/$deb
newver=$(dpkg-deb -f "$new" Version)
oldver=${newver%-*}~prev-1
old=$out/rubyprofd_${oldver}_$(dpkg --print-architecture).deb
rm -rf "$out/old" && dpkg-deb -R "$new" "$out/old"
sed -i "s/^Version: .*/Version: $oldver/" "$out/old/DEBIAN/control"
printf '# (the default file of %s)\n' "$oldver" >>"$out/old$conf"
if ! dpkg-deb --root-owner-group -b "$out/old" "$old" >"$out/old.log" 2>&1; then
	bad "the earlier package" "$(tail -n 3 "$out/old.log")"
	finish
fi
dpkg-deb --fsys-tarfile "$new" | tar -xO ".$conf" >"$out/new.conf"
check "an earlier package: $oldver < $newver, its $conf differs" \
	sh -c "dpkg --compare-versions '$oldver' lt '$newver' && ! dpkg-deb --fsys-tarfile '$old' | tar -xO '.$conf' | cmp -s - '$out/new.conf'"

# ---- an app to profile ------------------------------------------------------------------------
mkdir -p "$BOOT_ROOT/opt/live"
cp tests/package/live/app.rb "$BOOT_ROOT/opt/live/app.rb"
in_root useradd --system --no-create-home --shell /usr/sbin/nologin shop
printf '[Unit]\nDescription=the shop app\n[Service]\nUser=shop\nExecStart=/usr/bin/ruby /opt/live/app.rb shop\n' \
	>"$BOOT_ROOT/etc/systemd/system/shop.service"
in_root systemctl daemon-reload
in_root systemctl start shop

spool=$BOOT_ROOT/var/lib/rubyprofd/spool
sidecars() { ls "$spool"/*-shop-[0-9]*.json 2>/dev/null | sort; }
count() { sidecars | wc -l; }
newer_than() { [ "$(count)" -gt "$1" ]; }
# dpkg's conffile prompt, answered as apt's default answer does: keep the edited file (for
# apt-get run without a terminal, these are the options that say so)
keep=(-o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)

# round STATE: the earlier package installed and configured, the service enabled and left in
# STATE (running or stopped) with profiles in the spool, then the upgrade, and its checks.
round() {
	local state=$1 log="$out/apt-$1.log" pid before t_up
	: >"$log"
	if ! apt_install "$out" "$log" "$old"; then
		if [ -n "$apt_skip" ]; then skipped "upgrade ($state)" "$apt_why"; else bad "apt install ./${old##*/}" "$apt_why"; fi
		return
	fi
	printf '\n# an operator edit\ninterval = 3\nfrequency = 49\nlabel = team=%s\n' "$state" >>"$BOOT_ROOT$conf"
	cp "$BOOT_ROOT$conf" "$out/edited.conf"
	in_root systemctl enable --now rubyprofd >>"$log" 2>&1
	if ! poll 60 newer_than 0; then
		bad "upgrade ($state)" "no profile of shop from $oldver: $(in_root journalctl -u rubyprofd -n 3 -o cat)"
		return
	fi
	[ "$state" = stopped ] && in_root systemctl stop rubyprofd
	pid=$(prop rubyprofd MainPID)
	before=$(prop rubyprofd ActiveState)
	ls "$spool" | sort >"$out/spool-before"
	t_up=$(python3 -c 'import time; print(int(time.monotonic() * 1e6))')

	if ! apt_install "$out" "$log" "$new" "${keep[*]}"; then
		bad "apt install ./$deb over $oldver ($state)" "$apt_why"
		return
	fi
	ok "apt install ./$deb: $oldver -> $newver, the service $before ($(prop rubyprofd UnitFileState)) before"
	check "the edited $conf is kept, the new default beside it as $conf.dpkg-dist ($state)" \
		sh -c "cmp '$BOOT_ROOT$conf' '$out/edited.conf' && cmp '$BOOT_ROOT$conf.dpkg-dist' '$out/new.conf'"
	ls "$spool" | sort >"$out/spool-after"
	check "the spool survives: all $(wc -l <"$out/spool-before") files of before are there ($state)" \
		test -z "$(comm -23 "$out/spool-before" "$out/spool-after")"
	if [ "$state" = running ]; then
		check "running before: restarted by the package scripts (pid $pid -> $(prop rubyprofd MainPID), $(prop rubyprofd ActiveState))" \
			test "$(prop rubyprofd ActiveState)" = active -a "$(prop rubyprofd MainPID)" != "$pid" \
			-a "$(prop rubyprofd ExecMainStartTimestampMonotonic)" -gt "$t_up"
		local n
		n=$(count)
		if poll 60 newer_than "$n"; then
			local last
			last=$(sidecars | tail -n 1)
			check "profiling goes on with the kept file: $(json "$last" 'd["sample_rate"]') Hz, team=$(json "$last" 'd["labels"].get("team")')" \
				test "$(json "$last" 'd["sample_rate"]')/$(json "$last" 'd["labels"].get("team")')" = 49/running
		else
			bad "profiling goes on after the upgrade" "no new profile of shop: $(in_root journalctl -u rubyprofd -n 3 -o cat)"
		fi
	else
		local started
		started=$(prop rubyprofd ExecMainStartTimestampMonotonic)
		check "stopped before: left stopped by the package scripts, still enabled ($(prop rubyprofd ActiveState), $(prop rubyprofd UnitFileState), last started before the upgrade)" \
			test "$(prop rubyprofd ActiveState)/$(prop rubyprofd UnitFileState)" = inactive/enabled -a "$started" -lt "$t_up"
	fi
	in_root apt-get purge -y rubyprofd >"$out/purge-$state.log" 2>&1
}
round running
round stopped
echo "    $((SECONDS - t0)) s from the boot"
finish
