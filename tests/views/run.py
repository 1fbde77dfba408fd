#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The views of `rubyprofd report`, checked with the real readers: folded stacks summed per frame
against `go tool pprof -top`; the SVG parsed as XML; the flame graph page loaded in Debian's
headless chromium, its drawn rectangles (window.__layout) checked against the profile's numbers,
with a screenshot kept; the speedscope file opened by speedscope itself (npm package, installed
into a cache) and its table read back; --oneshot --format (root). Missing tools SKIP with the
reason ("missing: ..."), which is a FAIL when make deps ran (RP_DEPS_INSTALLED=1: make test). Prints one PASS/FAIL/SKIP line per test, then "views: N passed, N failed, N skipped".
    tests/views/run.py BUILD_DIR"""
import collections
import gzip
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cdp  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
RUBYPROFD = os.path.join(BUILD, "rubyprofd")
ARTIFACTS = os.path.join(BUILD, "tests", "views")
NPM_CACHE = os.environ.get("RP_NPM_CACHE", "/var/cache/rubyprofd-test/npm")
PROFILE = os.path.join(ROOT, "tests", "fuzz", "corpus", "pprofread", "workload.pprof.gz")
TMP = tempfile.mkdtemp(prefix="rp-views.")
results = collections.Counter()


class Skip(Exception):
    pass


def run(args, **kw):
    r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    if r.returncode != 0:
        raise AssertionError("%s failed (%d): %s" % (" ".join(args), r.returncode, r.stderr[-2000:]))
    return r.stdout


EXT = {"flamegraph": ".html", "svg": ".svg", "speedscope": ".speedscope.json", "collapsed": ".folded",
       "top": ".txt"}


def report(fmt, *extra, profile=PROFILE):
    out = os.path.join(TMP, "out" + EXT[fmt])
    run([RUBYPROFD, "report", profile, "--format", fmt, "-o", out] + list(extra))
    return out


def folded(profile=PROFILE):
    stacks = []
    for line in open(report("collapsed", profile=profile)):
        path, n = line.rstrip("\n").rsplit(" ", 1)
        stacks.append((path.split(";"), int(n)))
    return stacks


def prefix_sums(stacks):
    """The merged tree of folded stacks: (path tuple) -> samples."""
    sums = collections.Counter()
    for path, n in stacks:
        for d in range(1, len(path) + 1):
            sums[tuple(path[:d])] += n
    return sums


def pprof_top(profile):
    if not shutil.which("go"):
        raise Skip("missing: a go toolchain for go tool pprof (make deps installs golang-go)")
    env = dict(os.environ, HOME=TMP, GOCACHE=os.path.join(TMP, "gocache"), GOFLAGS="")
    out = run(["go", "tool", "pprof", "-top", "-sample_index=samples", "-nodecount=1000000",
               "-nodefraction=0", "-edgefraction=0", profile], env=env)
    rows, total = [], None
    for line in out.splitlines():
        m = re.search(r"of (\d+) total", line)
        if m:
            total = int(m.group(1))
        m = re.match(r"\s*(\d+)\s+[\d.]+%\s+[\d.]+%\s+(\d+)\s+[\d.]+%\s+(.*)$", line)
        if m:
            rows.append((m.group(3).strip(), int(m.group(1)), int(m.group(2))))
    if total is None:
        m = re.search(r"Showing nodes accounting for (\d+), ([\d.]+)% of (\d+) total", out)
        total = int(m.group(3)) if m else sum(r[1] for r in rows)
    return rows, total


def test_collapsed_vs_pprof():
    stacks = folded()
    rows, total = pprof_top(PROFILE)
    assert sum(n for _, n in stacks) == total, "folded total %d, pprof %d" % (
        sum(n for _, n in stacks), total)
    flat, cum = collections.Counter(), collections.Counter()
    for path, n in stacks:
        if path == ["[no frames]"]:
            continue  # pprof counts them in the total only
        flat[path[-1]] += n
        for name in set(path):
            cum[name] += n
    pflat, pcum, count = collections.Counter(), collections.Counter(), collections.Counter()
    for name, f, c in rows:
        pflat[name] += f
        pcum[name] += c
        count[name] += 1
    assert +flat == +pflat, "flat per frame differs:\nours %s\npprof %s" % (sorted(flat.items()), sorted(pflat.items()))
    for name in cum:
        if count[name] == 1:  # a name in two files is two pprof rows: their cum overlaps
            assert cum[name] == pcum[name], "%s: cum %d, pprof %d" % (name, cum[name], pcum[name])


def test_top_by_line():
    text = open(report("top", "--by", "line")).read()
    assert "by line" in text and re.search(r"workload\.rb:\d+", text), text


def test_filters():
    stacks = folded()
    total = sum(n for _, n in stacks)
    focus = [s for s in stacks if any("fib" in f for f in s[0])]
    out = [l for l in open(report("collapsed", "--focus", "fib"))]
    assert sum(int(l.rsplit(" ", 1)[1]) for l in out) == sum(n for _, n in focus) > 0
    out = open(report("collapsed", "--pid", "1")).read()
    assert out == "", "pid 1 has no samples here, got %r" % out[:200]
    r = subprocess.run([RUBYPROFD, "report", PROFILE, "--since", "2100-01-01T00:00:00Z", "-f", "collapsed"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert r.returncode == 1 and "--since" in r.stderr, r.stderr
    r = run([RUBYPROFD, "report", PROFILE, PROFILE, "-f", "collapsed"])
    merged = sum(int(l.rsplit(" ", 1)[1]) for l in r.splitlines())
    assert merged == 2 * total, "two copies merge to %d, want %d" % (merged, 2 * total)


def test_svg():
    tree = ET.parse(report("svg"))
    ns = "{http://www.w3.org/2000/svg}"
    rects = [r for r in tree.iter(ns + "rect") if r.get("data-name")]
    sums = prefix_sums(folded())
    total = sum(n for p, n in sums.items() if len(p) == 1)
    # Per name, the samples of its rectangles: the tree splits a name in two files into two
    # frames where folded stacks merge them, but the sums agree. Every frame is wide enough here.
    assert min(sums.values()) * 1180 / total >= 0.5
    want = collections.Counter()
    for p, n in sums.items():
        want[p[-1]] += n
    want["all"] += total
    got = collections.Counter()
    for r in rects:
        got[r.get("data-name")] += int(r.get("data-samples"))
    assert got == want, "SVG frames differ: missing %s, extra %s" % (list((want - got).items())[:5],
                                                                      list((got - want).items())[:5])


def need_chromium():
    if not shutil.which("chromium"):
        raise Skip("missing: chromium (make deps installs it)")


def check_layout(layout, width, total, sums):
    rects = [r for r in layout if not r["ancestor"]]
    root = [r for r in rects if r["depth"] == 0]
    assert len(root) == 1 and root[0]["value"] == total, "root %s, total %d" % (root, total)
    by_node = {r["node"]: r for r in rects}
    for r in rects:
        want = r["value"] * width / total
        assert abs(r["w"] - want) < 0.01, "%s: width %.3f, want %.3f" % (r["name"], r["w"], want)
        p = by_node.get(r["parent"])
        if p is not None:
            assert r["x"] >= p["x"] - 0.01 and r["x"] + r["w"] <= p["x"] + p["w"] + 0.01, \
                "%s outside its parent %s" % (r["name"], p["name"])
    assert min(sums.values()) * width / total >= 1  # every frame is drawn: the sums per name agree
    want, got = collections.Counter(), collections.Counter()
    for p, n in sums.items():
        want[p[-1]] += n
    for r in rects:
        if r["depth"] > 0:
            got[r["name"]] += r["value"]
    assert got == want, "drawn frames differ: missing %s, extra %s" % (
        list((want - got).items())[:5], list((got - want).items())[:5])


LAYOUT_JS = ("JSON.stringify({w: document.getElementById('scroller').clientWidth, "
             "l: window.__layout.map(r => ({node: r.node, parent: r.parent, name: r.name, value: r.value, "
             "depth: r.depth, x: r.x, y: r.y, w: r.w, ancestor: r.ancestor}))})")


def test_flamegraph_chromium():
    need_chromium()
    page = report("flamegraph")
    sums = prefix_sums(folded())
    total = sum(n for p, n in sums.items() if len(p) == 1)
    c = cdp.Chromium(1400, 900)
    try:
        c.open("file://" + page, "window.__ready === true")
        data = json.loads(c.eval(LAYOUT_JS))
        check_layout(data["l"], data["w"], total, sums)
        os.makedirs(ARTIFACTS, exist_ok=True)
        c.screenshot(os.path.join(ARTIFACTS, "flamegraph.png"))
        # search: the samples under a frame matching /fib/, each counted once
        want = sum(n for p, n in folded() if any(re.search("fib", f, re.I) for f in p))
        got = c.eval("window.__flame.search('fib')")
        assert got == want > 0, "search sum %s, want %d" % (got, want)
        assert "matched: %d samples" % want in c.eval("document.getElementById('matched').textContent")
        c.eval("window.__flame.search('')")
        # zoom: the clicked frame spans the width, its ancestors stay drawn (full width, dimmed)
        target = max((r for r in data["l"] if r["depth"] == 2), key=lambda r: r["value"])
        c.eval("window.__flame.zoom(%d)" % target["node"])
        z = json.loads(c.eval(LAYOUT_JS))["l"]
        zr = [r for r in z if r["node"] == target["node"]][0]
        assert abs(zr["w"] - data["w"]) < 0.01 and zr["x"] == 0, zr
        assert sum(1 for r in z if r["ancestor"]) == 2
        c.screenshot(os.path.join(ARTIFACTS, "flamegraph-zoomed.png"))
        # a real click on a frame zooms too
        c.eval("window.__flame.zoom(0)")
        r0 = [r for r in json.loads(c.eval(LAYOUT_JS))["l"] if r["node"] == target["node"]][0]
        top = c.eval("document.getElementById('scroller').getBoundingClientRect().top - "
                     "document.getElementById('scroller').scrollTop")
        for t in ("mouseMoved", "mousePressed", "mouseReleased"):
            c.call("Input.dispatchMouseEvent", type=t, x=r0["x"] + r0["w"] / 2, y=top + r0["y"] + 8,
                   button="left", clickCount=1)
        tip = c.eval("document.getElementById('tip').textContent")
        assert target["name"] in tip and "%d samples" % target["value"] in tip, tip
        assert c.eval("document.getElementById('status').textContent") == "zoomed: " + target["name"]
        # icicle: the root on top
        c.eval("window.__flame.zoom(0); window.__flame.toggle()")
        ic = json.loads(c.eval(LAYOUT_JS))["l"]
        assert [r for r in ic if r["depth"] == 0][0]["y"] == 0
        c.screenshot(os.path.join(ARTIFACTS, "icicle.png"))
    finally:
        c.close()


def test_speedscope_app():
    need_chromium()
    if not shutil.which("npm"):
        raise Skip("missing: npm to install speedscope (make deps installs it)")
    index = os.path.join(NPM_CACHE, "node_modules", "speedscope", "dist", "release", "index.html")
    if not os.path.exists(index):
        os.makedirs(NPM_CACHE, exist_ok=True)
        r = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", NPM_CACHE, "speedscope"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0 or not os.path.exists(index):
            raise Skip("npm install speedscope failed: %s" % r.stdout[-300:])
    import base64
    data = open(report("speedscope"), "rb").read()
    doc = json.loads(data)
    js = os.path.join(TMP, "load.js")
    # what speedscope's own command line does with a file: a script the page loads
    with open(js, "w") as f:
        f.write("speedscope.loadFileFromBase64(%s, %s)" % (json.dumps("workload.speedscope.json"),
                                                           json.dumps(base64.b64encode(data).decode())))
    rows, total = pprof_top(PROFILE)
    c = cdp.Chromium(1400, 4000)
    try:
        c.open("file://%s#localProfilePath=%s" % (index, js),
               "document.body && document.body.innerText.indexOf(%s) >= 0" % json.dumps(doc["name"]))
        c.key("3", "Digit3", 51)  # the sandwich view: a table of every frame's total and self
        deadline = time.time() + 60
        while "Symbol Name" not in c.eval("document.body.innerText"):
            assert time.time() < deadline, "no sandwich table"
            time.sleep(0.2)
        time.sleep(1)
        text = c.eval("document.body.innerText")
        if os.environ.get("RP_VIEWS_DEBUG"):
            print(text[:1500])
        os.makedirs(ARTIFACTS, exist_ok=True)
        c.screenshot(os.path.join(ARTIFACTS, "speedscope.png"))
    finally:
        c.close()
    # Per name: pprof -top merges the frames of one name (in several files), speedscope keeps
    # them apart: self sums per name must agree, totals where the name is one frame in both.
    flat, cum, count = collections.Counter(), collections.Counter(), collections.Counter()
    for m in re.finditer(r"(\d+)\s*\([^)]*\)\s+(\d+)\s*\([^)]*\)\s+(.+)", text):
        name = m.group(3).strip()
        flat[name] += int(m.group(2))
        cum[name] += int(m.group(1))
        count[name] += 1
    pflat, pcum, pcount = collections.Counter(), collections.Counter(), collections.Counter()
    for name, f, cu in rows:
        pflat[name] += f
        pcum[name] += cu
        pcount[name] += 1
    pflat["[no frames]"] = pcum["[no frames]"] = total - sum(r[1] for r in rows)
    pcount["[no frames]"] = 1
    assert +flat == +pflat, "self per name: speedscope %s\npprof %s" % (sorted(flat.items()), sorted(pflat.items()))
    assert sum(flat.values()) == total
    checked = 0
    for name in cum:
        if count[name] == 1 and pcount[name] == 1:
            assert cum[name] == pcum[name], "%s: total %d in speedscope, %d in pprof" % (name, cum[name], pcum[name])
            checked += 1
    assert checked >= 10, "only %d frames compared" % checked


def encode_pprof(samples, functions):
    """A gzip'd pprof: functions ["name"...]; location i+1 = function i+1; samples [(ids, n)]."""
    def varint(v):
        out = bytearray()
        while True:
            b = v & 0x7f
            v >>= 7
            out.append(b | (0x80 if v else 0))
            if not v:
                return bytes(out)

    def field(num, payload):
        return varint(num << 3 | 2) + varint(len(payload)) + payload

    strings = ["", "samples", "count", "f.rb"] + functions
    msg = bytearray(field(1, b"\x08\x01\x10\x02"))
    for ids, n in samples:
        packed = b"".join(varint(i) for i in ids)
        msg += field(2, field(1, packed) + field(2, varint(n)))
    for i in range(len(functions)):
        msg += field(4, b"\x08" + varint(i + 1) + field(4, b"\x08" + varint(i + 1) + b"\x10\x01"))
        msg += field(5, b"\x08" + varint(i + 1) + b"\x10" + varint(4 + i) + b"\x20\x03")
    for s in strings:
        msg += field(6, s.encode())
    return gzip.compress(bytes(msg), 1)


def test_big_profile():
    """50,000 stacks under a 10,000-frame recursion: report and the page stay fast."""
    need_chromium()
    nfun, deep, nstacks = 300, 10000, 50000
    functions = ["f%d" % i for i in range(nfun)]
    chain = [1 + (d % 50) for d in range(deep)]  # a 10,000-deep recursion through 50 methods
    samples = [([51 + (i % 250), 51 + (i * 7 % 250)] + (chain if i % 1000 == 0 else chain[:i % 500]), 1)
               for i in range(nstacks)]
    path = os.path.join(TMP, "big.pb.gz")
    with open(path, "wb") as f:
        f.write(encode_pprof([(list(reversed(ids)), n) for ids, n in samples], functions))
    t0 = time.time()
    page = report("flamegraph", profile=path)
    t_report = time.time() - t0
    c = cdp.Chromium(1400, 900)
    try:
        t0 = time.time()
        c.open("file://" + page, "window.__ready === true", timeout=300)
        t_page = time.time() - t0
        n = c.eval("window.__layout.length")
        in_page = c.eval("window.__readyMs")
        depth = c.eval("window.__flame.maxDepth")
        assert depth >= deep, "max depth %d" % depth
        c.screenshot(os.path.join(ARTIFACTS, "big.png"))
    finally:
        c.close()
    print("  big profile: %d stacks, %d deep: report %.1f s, page ready %.1f s (%.1f s in the page), "
          "%d rectangles drawn" % (nstacks, deep, t_report, t_page, in_page / 1000, n))


def test_oneshot_format():
    if os.geteuid() != 0:
        raise Skip("--oneshot needs root")
    if not shutil.which("ruby"):
        raise Skip("missing: ruby (make deps installs it)")
    out = os.path.join(TMP, "os.pb.gz")
    text = run([RUBYPROFD, "--oneshot", "--format", "flamegraph", "-o", out, "--",
                "ruby", os.path.join(ROOT, "examples", "workload.rb"), "2"], timeout=120)
    html = os.path.join(TMP, "os.html")
    assert "flamegraph: %s" % html in text, text
    assert "window.__PROFILE=" in open(html).read()


def main():
    if not os.access(RUBYPROFD, os.X_OK):
        print("views: SKIP (no %s: make all)" % RUBYPROFD)
        print("views: 0 passed, 0 failed, 1 skipped")
        return 0
    tests = [(k, v) for k, v in globals().items() if k.startswith("test_") and callable(v)]
    only = os.environ.get("RP_VIEWS_FILTER")
    for name, fn in tests:
        if only and not re.search(only, name):
            continue
        try:
            fn()
            print("PASS %s" % name)
            results["passed"] += 1
        except Skip as e:
            # a dependency that make deps installs (RP_DEPS_INSTALLED: it ran): a failure
            if str(e).startswith("missing:") and os.environ.get("RP_DEPS_INSTALLED") == "1":
                print("FAIL %s: skipped for a dependency make deps installs: %s" % (name, e))
                results["failed"] += 1
                continue
            print("SKIP %s: %s" % (name, e))
            results["skipped"] += 1
        except Exception as e:  # noqa: BLE001 - any failure is a FAIL line
            print("FAIL %s: %s" % (name, e))
            results["failed"] += 1
        sys.stdout.flush()
    shutil.rmtree(TMP, ignore_errors=True)
    print("views: %d passed, %d failed, %d skipped" % (results["passed"], results["failed"], results["skipped"]))
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
