#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Writes fuzz_collect's seeds (tests/fuzz/corpus/collect/): records as tests/fuzz/fuzz_collect.c
reads them, in include/rubyprof.h's layout (RP_REC_VERSION 2).
    tests/fuzz/mkseeds_collect.py DIR"""
import os
import struct
import sys

ISEQ, CFUNC = 1, 2
LAST, TRUNCATED, GC, DELTA, SAME = 0x01, 0x02, 0x40, 0x100, 0x200
PID = 0x7FFFFFF0  # FAKEMEM_PID
# rows of daemon/ruby/offsets.c: 3 is 3.1, 5 is 3.3, 6 is 3.4
ROWS = ((3, "3.1"), (5, "3.3"), (6, "3.4"))


def rec_hdr(kind, state=0, wunit=0, weight=1, pid=0, tid=0, size=0):
    return struct.pack("<BBBBIQQII", 2, kind, state, wunit, size, weight, 0, pid, tid)


def stack(state=0, wunit=0, weight=1, cpu=0, seq=1, flags=LAST, chunk=0, frames=(), trunc=0,
          gc=0, first=0, nslots=None, base=0, syscall=0, rth=0):
    if nslots is None:
        nslots = first + len(frames)
    h = rec_hdr(1, state, wunit, weight)
    h += struct.pack("<IIIHHIIIIII", cpu, seq, flags, chunk, len(frames), trunc, gc, first,
                     nslots, base, syscall)
    h += b"worker".ljust(16, b"\0") + struct.pack("<Q", rth)
    assert len(h) == 96
    for addr, info, ep in frames:
        h += struct.pack("<QQQ", addr, info, ep)
    return h


def wrap(mode, body):
    return bytes([mode]) + struct.pack("<H", len(body)) + body


# frame fields below 8 stand for fakemem.h's roots: 3 the iseq, 4 the pc, 5 the ep, 6 the
# method entry
ISEQ_FRAME = (3, ISEQ << 56 | 4, 5)
CFUNC_FRAME = (6, CFUNC << 56, 0)
M = 0x01 | 0x08 | 0x10  # structured stack, the fake pid, roots


def seeds():
    for row, name in ROWS:
        yield f"stack-{name}", bytes([row, 0]) + wrap(M, stack(frames=[CFUNC_FRAME, ISEQ_FRAME]))
    # a stack in two chunks, a delta based on it, a GC sample cut short
    d = bytes([5, 0])
    d += wrap(M, stack(seq=1, flags=0, frames=[CFUNC_FRAME], nslots=2))
    d += wrap(M, stack(seq=1, chunk=1, frames=[ISEQ_FRAME], first=1, nslots=2))
    d += wrap(M, stack(seq=2, flags=LAST | DELTA, frames=[ISEQ_FRAME], first=1, nslots=2, base=1))
    d += wrap(M, stack(seq=3, flags=LAST | GC | TRUNCATED, frames=[ISEQ_FRAME], gc=1, trunc=9000))
    yield "chunks-delta-gc", d
    # native and kernel stacks (option bit 0), wall-clock records and their reuse (bit 1)
    d = bytes([5, 3])
    k = rec_hdr(3, pid=PID) + struct.pack("<IIII", 0, 1, 2, 0)
    k += struct.pack("<QQ", 0xFFFFFFFF81001010, 0xFFFFFFFF81002020) + b"\0" * 8 * 62
    d += wrap(0x05 | 0x08, k)
    u = rec_hdr(2, pid=PID) + struct.pack("<IIQQQII", 0, 1, 0x401000, 0x7FFD0000, 0, 64, 0)
    u += b"worker".ljust(16, b"\0") + b"\x11" * 64
    d += wrap(0x03 | 0x08, u)
    d += wrap(M, stack(frames=[CFUNC_FRAME, ISEQ_FRAME]))
    wall = dict(cpu=2, state=3, wunit=1)
    d += wrap(M, stack(seq=7, weight=10000000, syscall=1, frames=[ISEQ_FRAME], **wall))
    d += wrap(M, stack(seq=7, weight=10000000, frames=[ISEQ_FRAME], rth=1, **wall))
    d += wrap(M, stack(seq=8, weight=30000000, flags=LAST | SAME, base=7, trunc=3, rth=1, **wall))
    d += wrap(M, stack(seq=9, weight=30000000, flags=LAST | SAME, base=5, trunc=2, rth=1, **wall))
    yield "native-kernel-wall", d
    # raw records: a bad version, a short one, an unknown kind
    yield "raw", bytes([5, 0]) + wrap(0, b"\x01" + b"\0" * 40) + wrap(0, b"\x02\x01") + \
        wrap(0, rec_hdr(9, size=40))


def main():
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} DIR")
    for name, data in seeds():
        with open(os.path.join(sys.argv[1], name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
