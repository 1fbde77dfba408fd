#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# The tenant's side of one default-mode input (tests/hostile/README), in $HR_DIR. $1: its name.
set -e
H=$(dirname "$(readlink -f "$0")")
cd "$HR_DIR"
P=/usr/bin/python3
V=$(/usr/bin/ruby -e 'print RbConfig::CONFIG["ruby_version"][/\A\d+\.\d+/]')
MAP='import mmap, sys, time
fs = [open(p, "rb") for p in sys.argv[1:]]
ms = [mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) for f in fs]
time.sleep(3600)'
case "$1" in
nonelf)	# files named like libruby: garbage, an ELF header cut short, an ELF header alone
	head -c 65536 /dev/urandom > libruby.so.$V
	head -c 20 "$(readlink -f /usr/lib/x86_64-linux-gnu/libruby-$V.so)" > libruby-$V.so.$V.1
	head -c 4096 "$(readlink -f /usr/lib/x86_64-linux-gnu/libruby-$V.so)" > libruby-$V.so.$V.2
	touch ready; exec $P -c "$MAP" libruby.so.$V libruby-$V.so.$V.1 libruby-$V.so.$V.2 ;;
nonelf_exec) # a "ruby" whose libruby is a garbage file (LD_PRELOAD cannot; a copy of ruby
	# whose libruby.so.3.1 resolves to garbage cannot start): the mapping is the whole input
	touch ready; exec $P -c "$MAP" "$(readlink -f /usr/bin/ruby)" ;;
execstorm) # thousands of short execs a second, for 10 s
	gcc -O2 -o storm "$H/execstorm.c"
	touch ready; exec ./storm 10 ;;
threads) # as many threads as the user may have (up to 10,000) in one Ruby
	exec /usr/bin/ruby -e 'ts = []; begin; 10_000.times { |i| ts << Thread.new { Thread.current.name = "t#{i}"; i % 100 == 0 ? loop { } : sleep } }; rescue ThreadError => e; warn "#{ts.size} threads: #{e}"; end; warn "#{ts.size} threads"; File.write("ready", ts.size.to_s); loop { }' ;;
userns) # a Ruby in a user and pid namespace of its own
	touch ready; exec unshare -Urpf --mount-proc /usr/bin/ruby -e 'loop { }' ;;
clients) # 100 slow clients: idle, trickling, and half-open ones that never read the answer
	touch ready; exec /usr/bin/ruby "$H/slowclients.rb" "$HR_PORT" ;;
names)	# a Ruby that renames itself and its threads to escapes and invalid UTF-8, constantly
	touch ready; exec /usr/bin/ruby -e '
	  bad = ["\e[31m\n", "\xff\xfe", "\u202e", "\x01x", "%s%n", "\x7f\x80\x9b"].map(&:b)
	  Thread.new { i = 0; loop { Thread.current.name = bad[i % bad.size] + i.to_s; i += 1 } }
	  i = 0; loop { Process.setproctitle(bad.rotate(i).join * 20); File.write("/proc/self/comm", bad[i % bad.size]) rescue nil; i += 1 }' ;;
*) echo "unknown input $1" >&2; exit 2 ;;
esac
