#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
# Hostile copies of an ELF64 object for the hostile round (tests/hostile/README):
#   elfpatch.py ehhdr-count IN OUT     .eh_frame_hdr claims 0xffffffff entries
#   elfpatch.py ehhdr-lie IN OUT       its table's FDE pointers point out of .eh_frame, unsorted
#   elfpatch.py sections IN OUT N      N section headers (extended numbering past 65279), sparse
#   elfpatch.py symtab IN OUT N        a .symtab of N real FUNC symbols over the text (+ strtab)
#   elfpatch.py buildid IN OUT K       the build id's first word set to K (a distinct object)
import shutil, struct, sys

def shdrs(b):
    shoff, = struct.unpack_from("<Q", b, 0x28)
    shnum, shstrndx = struct.unpack_from("<HH", b, 0x3c)
    out = []
    for i in range(shnum):
        f = struct.unpack_from("<IIQQQQIIQQ", b, shoff + 64 * i)
        out.append(dict(at=shoff + 64 * i, name=f[0], type=f[1], addr=f[3], off=f[4], size=f[5]))
    strs = out[shstrndx]
    for s in out:
        end = b.index(b"\0", strs["off"] + s["name"])
        s["sname"] = b[strs["off"] + s["name"]:end].decode()
    return out

def sec(b, name):
    return next(s for s in shdrs(b) if s["sname"] == name)

cmd, src, dst = sys.argv[1:4]
b = bytearray(open(src, "rb").read())
if cmd == "ehhdr-count":
    h = sec(b, ".eh_frame_hdr")
    struct.pack_into("<I", b, h["off"] + 8, 0xFFFFFFFF)
elif cmd == "ehhdr-lie":
    h = sec(b, ".eh_frame_hdr")
    n, = struct.unpack_from("<I", b, h["off"] + 8)
    for i in range(n):
        at = h["off"] + 12 + 8 * i
        loc, fde = struct.unpack_from("<ii", b, at)
        # FDE pointers far past the section (and some before it), every third entry swapped
        struct.pack_into("<ii", b, at, loc if i % 3 else -loc, 0x7FFFFF00 - i if i % 2 else -0x7FFFFF00 + i)
elif cmd == "sections":
    n = int(sys.argv[4])
    old = shdrs(b)
    shoff = (len(b) + 63) & ~63
    b.extend(b"\0" * (shoff - len(b)))
    # the old headers first (their names and types), then n - len(old) empty PROGBITS ones
    for s in old:
        b.extend(b[s["at"]:s["at"] + 64])
    struct.pack_into("<Q", b, 0x28, shoff)
    struct.pack_into("<H", b, 0x3c, 0)  # e_shnum 0: the count in section 0's sh_size
    struct.pack_into("<Q", b, shoff + 0x20, n)
    hdr = struct.pack("<IIQQQQIIQQ", 0, 1, 0, 0, 0, 0, 0, 0, 1, 0)
    with open(dst, "wb") as f:
        f.write(b)
        f.write(hdr * (n - len(old)))
    sys.exit(0)
elif cmd == "buildid":
    # another build id (its first 4 bytes: int(argv[4])): a distinct object for every cache
    n = sec(b, ".note.gnu.build-id")
    struct.pack_into("<I", b, n["off"] + 16, int(sys.argv[4]))
elif cmd == "symtab":
    n = int(sys.argv[4])
    text = sec(b, ".text")
    old = shdrs(b)
    names = bytearray(b"\0")
    syms = bytearray(b"\0" * 24)
    for i in range(n):
        off = len(names)
        names += b"f%07d\0" % i
        syms += struct.pack("<IBBHQQ", off, 0x12, 0, 1 + [s["sname"] for s in old].index(".text") - 1,
                            text["addr"] + (i * 16) % max(text["size"], 16), 16)
    shstr = sec(b, ".shstrtab")
    # names for the two new sections: appended to a new copy of .shstrtab at the file's end
    newshstr = bytearray(b[shstr["off"]:shstr["off"] + shstr["size"]])
    n_sym = len(newshstr); newshstr += b".symtab\0"
    n_str = len(newshstr); newshstr += b".strtab\0"
    def put(blob):
        at = (len(b) + 7) & ~7
        b.extend(b"\0" * (at - len(b)))
        b.extend(blob)
        return at
    o_syms = put(syms); o_names = put(names); o_shstr = put(newshstr)
    shoff = (len(b) + 63) & ~63
    b.extend(b"\0" * (shoff - len(b)))
    for s in old:
        b.extend(b[s["at"]:s["at"] + 64])
    shstrndx, = struct.unpack_from("<H", b, 0x3e)
    struct.pack_into("<Q", b, shoff + 64 * shstrndx + 0x18, o_shstr)
    struct.pack_into("<Q", b, shoff + 64 * shstrndx + 0x20, len(newshstr))
    k = len(old)
    b.extend(struct.pack("<IIQQQQIIQQ", n_sym, 2, 0, 0, o_syms, len(syms), k + 1, 1, 8, 24))
    b.extend(struct.pack("<IIQQQQIIQQ", n_str, 3, 0, 0, o_names, len(names), 0, 0, 1, 0))
    struct.pack_into("<Q", b, 0x28, shoff)
    struct.pack_into("<H", b, 0x3c, k + 2)
else:
    sys.exit("unknown command " + cmd)
open(dst, "wb").write(b)
