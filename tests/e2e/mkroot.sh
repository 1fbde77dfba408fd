#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Builds (or reuses) a Debian root holding one Ruby version, for the end-to-end version matrix,
# or a plain Debian 12 root (no Ruby) for the package test (tests/package/test-deb.sh), or a
# Debian 12 or 13 root that boots (systemd, dbus and the suite's Ruby) for the live package test
# (tests/package/test-live.sh, systemd-nspawn -b).
#
#   tests/e2e/mkroot.sh [--dev] VERSION [CACHE_DIR]     VERSION: 2.7 | 3.3 | 3.4 | bookworm |
#                                                       bookworm-boot | trixie-boot
#
# --dev: the root also gets its Ruby's headers (rubyX.Y-dev), for the C extension that the tests
# build (test_native's cext). They are added on demand to a root that is already complete (their
# own stamp, .dev-complete), never by rebuilding it.
#
# Prints the root's path on success. Exit 0: ready; exit 77: the archive could not serve the suite
# (the reason is on stderr, the caller reports the version as SKIPPED); any other exit: a real failure.
# Roots are cached under CACHE_DIR (default /var/cache/rubyprofd-test) and reused when complete;
# an incomplete root (no .complete stamp) is rebuilt from scratch. The archive is whatever the host's
# apt configuration uses, else debootstrap's own default: no host name is written here.
set -euo pipefail

dev=
if [ "${1:-}" = --dev ]; then
	dev=1
	shift
fi
ver=${1:?usage: mkroot.sh [--dev] VERSION [CACHE_DIR]}
cache=${2:-${RUBYPROF_ROOT_CACHE:-/var/cache/rubyprofd-test}}

case "$ver" in
2.7) suite=bullseye pkgs=ruby2.7 rubybin=ruby2.7 devpkg=ruby2.7-dev ;;
3.3) suite=trixie pkgs=ruby3.3 rubybin=ruby3.3 devpkg=ruby3.3-dev ;;
3.4) suite=sid pkgs= rubybin=ruby3.4 devpkg=ruby3.4-dev ;;
bookworm) suite=bookworm pkgs= rubybin= devpkg= ;;
# systemd as PID 1 and its bus; Ruby for the apps that the service profiles there. The package's
# own dependencies are left out: the test installs them with apt, as an operator does.
bookworm-boot) suite=bookworm pkgs=systemd,systemd-sysv,dbus,ruby,procps rubybin= devpkg= ;;
# the same on Debian 13 (systemd 257, Ruby 3.3), for the live test in the full suite
trixie-boot) suite=trixie pkgs=systemd,systemd-sysv,dbus,ruby,procps rubybin= devpkg= ;;
*) echo "mkroot: unknown version '$ver' (2.7, 3.3, 3.4, bookworm, bookworm-boot or trixie-boot)" >&2; exit 2 ;;
esac

# Packages some tests need, added to a root after it was made, each with a stamp of its own
# (.extra-PKG): a cached root gets them on demand instead of being rebuilt. puma (test_puma):
# Debian builds it for the suite's default Ruby only, so not in the 3.4 root (sid's puma has
# its extension for Ruby 3.3 alone; under ruby3.4 `require "puma"` fails).
case "$ver" in
2.7 | 3.3) extras=puma ;;
*) extras= ;;
esac

name=ruby-$ver
[ -n "$rubybin" ] || name=debian-$ver
root="$cache/$name"

# One caller per root at a time, held until this script and its children end: tests/run-all.sh
# makes the roots in the background while the e2e runner and the package test ask for the same
# roots. A second caller waits here for the first, then finds the root complete (or makes it
# again if the first failed). Anything that changes a complete root belongs under this lock too.
mkdir -p "$cache"
exec 9>"$cache/$name.lock"
flock 9
log="$cache/$name.log"

# add_extras ROOT: installs the missing extras; one that does not install is reported on stderr
# and tried again next time (the root stays usable: the tests that need it skip).
add_extras() {
	local r=$1 p
	for p in $extras; do
		[ -f "$r/.extra-$p" ] && continue
		if DEBIAN_FRONTEND=noninteractive chroot "$r" apt-get -qq -y install "$p" >>"$log" 2>&1 ||
			{ chroot "$r" apt-get -qq update >>"$log" 2>&1 &&
				DEBIAN_FRONTEND=noninteractive chroot "$r" apt-get -qq -y install "$p" >>"$log" 2>&1; }; then
			touch "$r/.extra-$p"
		else
			echo "mkroot: $p does not install in $r (see $log); the tests that need it skip" >&2
		fi
	done
}

# Installs the Ruby's headers into a complete root, once (stamp .dev-complete). Exit 77 when the
# archive cannot serve them, as for the root itself.
add_dev() {
	[ -n "$dev" ] && [ -n "$devpkg" ] || return 0
	[ -f "$root/.dev-complete" ] && return 0
	local log="$cache/$name-dev.log" opts=()
	# 3.4's root takes Ruby from experimental, its headers too
	[ "$ver" = 3.4 ] && opts=(-o Acquire::Check-Valid-Until=false -t experimental)
	if ! { chroot "$root" apt-get -qq "${opts[@]:0:2}" update &&
		DEBIAN_FRONTEND=noninteractive chroot "$root" apt-get -qq -y --no-install-recommends \
			"${opts[@]}" install "$devpkg"; } >"$log" 2>&1; then
		reason=$(grep -E '^(E|W):' "$log" | tail -n 1)
		echo "mkroot: $devpkg into $root: ${reason:-see $log}" >&2
		if grep -qiE 'Failed to fetch|Unable to fetch|Temporary failure resolving|Could not resolve|404|Unable to locate package' "$log"; then
			exit 77
		fi
		exit 1
	fi
	touch "$root/.dev-complete"
}

if [ -f "$root/.complete" ]; then
	add_extras "$root"
	add_dev
	echo "$root"
	exit 0
fi

for tool in debootstrap chroot; do
	command -v "$tool" >/dev/null || { echo "mkroot: $tool is missing (make deps installs it)" >&2; exit 2; }
done

# The host's own Debian archive URI, read from its apt sources (deb822 or one-line format).
mirror=
if [ -r /etc/apt/sources.list.d/debian.sources ]; then
	mirror=$(awk '/^URIs:/ && $2 !~ /security/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources)
fi
if [ -z "$mirror" ] && [ -r /etc/apt/sources.list ]; then
	mirror=$(awk '$1 == "deb" && $0 !~ /security/ { for (i = 2; i <= NF; i++) if ($i ~ /:\/\//) { print $i; exit } }' /etc/apt/sources.list)
fi

rm -rf "$root" "$root.tmp"
include=${pkgs:+--include=$pkgs}
# shellcheck disable=SC2086
if ! debootstrap --variant=minbase $include "$suite" "$root.tmp" $mirror >"$log" 2>&1; then
	reason=$(grep -E '^(E|W):' "$log" | tail -n 1)
	rm -rf "$root.tmp"
	echo "mkroot: debootstrap $suite failed: ${reason:-see $log}" >&2
	# Only an archive that cannot serve the suite is a skip; anything else is a failure.
	if grep -qiE 'Failed getting release file|Release signed by unknown key|Couldn.t download|Failed to fetch|Unable to fetch|Temporary failure resolving|Could not resolve|404' "$log"; then
		exit 77
	fi
	exit 1
fi

if [ "$ver" = 3.4 ]; then
	# Ruby 3.4 lives in experimental; its Release files may be past Valid-Until.
	if [ -n "$mirror" ]; then src=$mirror; else src=$(awk '$1 == "deb" { print $2; exit }' "$root.tmp/etc/apt/sources.list"); fi
	echo "deb $src experimental main" >"$root.tmp/etc/apt/sources.list.d/experimental.list"
	if ! { chroot "$root.tmp" apt-get -qq -o Acquire::Check-Valid-Until=false update &&
		DEBIAN_FRONTEND=noninteractive chroot "$root.tmp" apt-get -qq -y -o Acquire::Check-Valid-Until=false \
			install -t experimental ruby3.4; } >>"$log" 2>&1; then
		reason=$(grep -E '^(E|W):' "$log" | tail -n 1)
		rm -rf "$root.tmp"
		echo "mkroot: ruby3.4 from experimental: ${reason:-see $log}" >&2
		exit 77
	fi
fi

if [ -n "$rubybin" ]; then
	if ! chroot "$root.tmp" "$rubybin" -e 'print RUBY_VERSION' >/dev/null 2>>"$log"; then
		rm -rf "$root.tmp"
		echo "mkroot: $rubybin does not run inside the new root (see $log)" >&2
		exit 1
	fi
	echo "$rubybin" >"$root.tmp/.rubybin"
fi
add_extras "$root.tmp"
touch "$root.tmp/.complete"
mv "$root.tmp" "$root"
add_dev
echo "$root"
