#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# The tenant's side of one mixed-mode input (tests/hostile/README): makes the hostile copies in
# $HR_DIR and runs calllibs.rb on them. $1: the input's name.
set -e
H=$(dirname "$(readlink -f "$0")")
cd "$HR_DIR"
LIBZ=$(readlink -f /lib/x86_64-linux-gnu/libz.so.1)
P=/usr/bin/python3
names_lib() { # 2000 functions with long nested C++ names under 1 KiB: libnames.so
	$P - <<'PY'
names = []
for k in range(2000):
    # ns::A<ns::B<ns::C<...>>> nested 60 deep, a different leaf per function
    inner = "i"
    for d in range(60):
        inner = "N2ns1%sIJ%sEEE" % ("ABCDEFGH"[d % 8], inner)
    n = "_ZN2ns4funcILi%dE%sEEll" % (k, inner)  # long ns::func<k, ...>(long)
    names.append(n[:1000])
with open("names.c", "w") as f:
    for k, n in enumerate(names):
        f.write('long f%d(long n) __asm__("%s");\n' % (k, n))
        f.write("long f%d(long n) { volatile long x = 0; for (long i = 0; i < n / 2000; i++) x += i; return x; }\n" % k)
    f.write("long spin(long n) { long s = 0;\n")
    for k in range(2000):
        f.write("s += f%d(n);\n" % k)
    f.write("return s; }\n")
PY
gcc -O1 -shared -fPIC -o libnames.so names.c
}
case "$1" in
ehhdr)	$P "$H/elfpatch.py" ehhdr-count "$LIBZ" libz-count.so
	$P "$H/elfpatch.py" ehhdr-lie "$LIBZ" libz-lie.so
	exec /usr/bin/ruby "$H/calllibs.rb" libz-count.so libz-lie.so ;;
xzbomb)	head -c 1G /dev/zero | xz -0 -T1 > bomb.xz
	objcopy --add-section .gnu_debugdata=bomb.xz "$LIBZ" libz-xz.so
	exec /usr/bin/ruby "$H/calllibs.rb" libz-xz.so ;;
symtab)	# 2000 functions run, and a .symtab of 450,000 symbols (14 MiB with its names: within the object bound) that every lookup of a new
	# address searches (libdwfl's dwfl_module_addrsym is a linear search)
	names_lib; strip -o libnames-s.so libnames.so
	$P "$H/elfpatch.py" symtab libnames-s.so libnames-sym.so 450000
	exec /usr/bin/ruby "$H/calllibs.rb" libnames-sym.so=spin ;;
symtab20) # the same in 20 processes: the per-process budget, 20 times
	names_lib; strip -o libnames-s.so libnames.so
	$P "$H/elfpatch.py" symtab libnames-s.so libnames-sym.so 450000
	for i in $(seq 19); do /usr/bin/ruby "$H/calllibs.rb" libnames-sym.so=spin & done
	exec /usr/bin/ruby "$H/calllibs.rb" libnames-sym.so=spin ;;
sections20) # 20 distinct objects of 4096 sections each (their build ids differ), one Ruby
	for i in $(seq 20); do $P "$H/elfpatch.py" buildid "$LIBZ" z$i.so $i
		$P "$H/elfpatch.py" sections z$i.so libz-4k-$i.so 4096; done
	exec /usr/bin/ruby "$H/calllibs.rb" $(for i in $(seq 20); do echo libz-4k-$i.so; done) ;;
plain20) # the control for symtab20: 20 Rubies calling a plain copy of libz
	cp "$LIBZ" libz-plain.so
	for i in $(seq 19); do /usr/bin/ruby "$H/calllibs.rb" libz-plain.so & done
	exec /usr/bin/ruby "$H/calllibs.rb" libz-plain.so ;;
sections) $P "$H/elfpatch.py" sections "$LIBZ" libz-65k.so 65535
	$P "$H/elfpatch.py" sections "$LIBZ" libz-4k.so 4096
	exec /usr/bin/ruby "$H/calllibs.rb" libz-65k.so libz-4k.so ;;
debuglink) # the debug file libz names: a symlink to /proc/self/mem beside one copy, a
	# device (bind-mounted in a mount namespace of our own) beside another
	L=$(readelf -p .gnu_debuglink "$LIBZ" | sed -n 's/.*\] *\([^ ]*\.debug\).*/\1/p')
	mkdir a b; cp "$LIBZ" a/libz.so; cp "$LIBZ" b/libz.so
	ln -s /proc/self/mem "a/$L"; touch "b/$L"
	exec unshare -Urm sh -c "mount --bind /dev/zero b/$L && exec /usr/bin/ruby $H/calllibs.rb a/libz.so b/libz.so" ;;
rewrite) # a mapped copy rewritten while used: its bytes turned over, then truncated and regrown
	cp "$LIBZ" libz-rw.so
	/usr/bin/ruby "$H/calllibs.rb" libz-rw.so & R=$!
	sleep 1
	$P - <<'PY'
import os, random, time
t = time.time()
size = os.path.getsize("libz-rw.so")
orig = open("libz-rw.so", "rb").read()
i = 0
while time.time() - t < 60:
    with open("libz-rw.so", "r+b") as f:
        # garbage over the headers and the section table (not the code the Ruby runs)
        f.seek(0); f.write(os.urandom(64))
        f.seek(size - 4096); f.write(os.urandom(4096))
    time.sleep(0.01)
    with open("libz-rw.so", "r+b") as f:
        f.write(orig)
    i += 1
PY
	wait $R ;;
mangled) # long nested C++ names under 1 KiB, 2000 functions of them
	names_lib
	exec /usr/bin/ruby "$H/calllibs.rb" libnames.so=spin ;;
cext)	# a C extension (tests/e2e/cext/cbext.c) that is such an object: its .eh_frame_hdr
	# claims every entry, a 1 GiB xz bomb as its MiniDebugInfo, 4096 sections
	HDR=$(/usr/bin/ruby -e 'print RbConfig::CONFIG["rubyhdrdir"]')
	ARCH=$(/usr/bin/ruby -e 'print RbConfig::CONFIG["rubyarchhdrdir"]')
	gcc -O2 -shared -fPIC -fno-optimize-sibling-calls -w -I "$HDR" -I "$ARCH" -o cbext0.so "$H/../e2e/cext/cbext.c"
	head -c 1G /dev/zero | xz -0 -T1 > bomb.xz
	objcopy --add-section .gnu_debugdata=bomb.xz cbext0.so cbext1.so
	$P "$H/elfpatch.py" ehhdr-count cbext1.so cbext2.so
	mkdir -p ext; $P "$H/elfpatch.py" sections cbext2.so ext/cbext.so 4096
	exec /usr/bin/ruby -I ext -e 'require "./ext/cbext"; File.write("ready", ""); loop { CbExt.each_twice { CbExt.spin(200_000) } }' ;;
*) echo "unknown input $1" >&2; exit 2 ;;
esac
