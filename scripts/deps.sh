#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Installs every build and test dependency of rubyprofd from Debian packages (bookworm).
# Idempotent: prints nothing and touches nothing when everything is already installed.
set -euo pipefail

pkgs=(
	make gcc clang llvm bpftool libbpf-dev libelf-dev zlib1g-dev pkg-config	# build
	libcriterion-dev ruby ruby-dev golang-go debootstrap			# tests
	clang-format clang-tidy cppcheck					# make check
	python3								# test_spool reads sidecars with its json module
	curl prometheus							# tests: metrics endpoint client, promtool
	openssl								# tests: the stand-in collector's test CA (TLS)
	debhelper lintian dpkg-dev fakeroot systemd				# make deb, make test-package
	chromium							# tests/views: the flame graph page and speedscope in headless chromium
	libclang-rt-14-dev						# make fuzz: clang 14's libFuzzer and sanitizer runtimes
	libcurl4-openssl-dev						# build: the shipper's HTTP transport (daemon/output/upload.c)
	musl-tools							# tests: the fake Ruby run by musl libc (Alpine's TLS layout)
	protobuf-compiler						# test_protocol decodes the collectors' protobuf bodies with protoc
	libdw-dev							# build: native stacks unwound with CFI by libdwfl (daemon/native/unwinder.c)
	libxml2-dev							# make fuzz: fuzz_text parses the SVG views with libxml2
	puma								# tests: test_puma profiles a real Puma server in wall-clock mode
	ruby-nokogiri							# tests: test_native's nokogiri script (libxml2 under Nokogiri's C methods)
	gdb								# tests: threadctx_writer finds each thread's otel_thread_ctx_v1 from outside (libthread_db)
	g++								# tests: test_native_cxx's library; test_demangle compares with libstdc++'s __cxa_demangle
	libiberty-dev							# build: C++ demangling with a bounded output (daemon/native/demangle.c)
	linux-perf							# tests: test_native compares its native depth with perf's
	systemd-container						# tests: systemd-nspawn boots a Debian root with systemd as PID 1
	fuse3 libfuse3-dev						# tests: test_hostile's FUSE server that never answers
)
# npm (tests/views opens the speedscope file in speedscope itself, installed with npm): Debian's
# package, unless a Node.js that brings its own npm is there already (Debian's npm would not
# install beside it).
command -v npm >/dev/null || pkgs+=(npm)
# `scripts/deps.sh bench` (make bench) also installs the peers that the bench measures.
if [ "${1:-}" = bench ]; then
	pkgs+=(bpftrace ruby-stackprof)
fi

missing=()
for p in "${pkgs[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "deps: missing Debian packages: ${missing[*]}; run as root (sudo make deps) to install them" >&2
	exit 1
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
