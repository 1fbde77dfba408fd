#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The views of `rubyprofd report`, checked with the real readers: folded stacks summed per frame
against `go tool pprof -top`; the SVG parsed as XML; the flame graph page loaded in Debian's
headless chromium, the rectangles it drew (its canvas's pixels in a screenshot, named by the
page's tooltips over them) checked against the profile's tree as `go tool pprof -traces` reads it,
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
import zlib

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
    # the profile's tree as go tool pprof reads it
    sums, _, frameless, _ = pprof_tree(PROFILE)
    if frameless:
        sums[("[no frames]",)] = frameless
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


def pprof_tree(profile):
    """The profile's call tree read by `go tool pprof -traces`, independently of rubyprofd: (names
    from the root down) -> samples under it, the total, the samples without frames, and each
    trace as (names from the root down, samples)."""
    if not shutil.which("go"):
        raise Skip("missing: a go toolchain for go tool pprof (make deps installs golang-go)")
    env = dict(os.environ, HOME=TMP, GOCACHE=os.path.join(TMP, "gocache"), GOFLAGS="")
    out = run(["go", "tool", "pprof", "-traces", "-sample_index=samples", profile], env=env)
    sums, total, frameless, traces = collections.Counter(), 0, 0, []
    for block in out.split("-----------+")[1:]:
        n, frames = None, []
        for line in block.splitlines():
            m = re.match(r"\s*(\d+)   (.*)$", line)
            if n is None and m:
                n = int(m.group(1))
                frames.append(m.group(2).strip())
            elif n is not None and line.startswith(" " * 13) and line.strip():
                frames.append(line.strip())
        if n is None:
            continue
        total += n
        frames = [f for f in frames if f]
        if not frames:
            frameless += n
        path = tuple(reversed(frames))  # pprof lists the leaf first
        traces.append((path, n))
        for d in range(1, len(path) + 1):
            sums[path[:d]] += n
    # samples without a location may print no trace: the header's total has them
    m = re.search(r"Total samples = (\d+)", out)
    if m and int(m.group(1)) > total:
        frameless += int(m.group(1)) - total
        total = int(m.group(1))
    return sums, total, frameless, traces


def png_pixels(data):
    """RGB(A) rows of a PNG (8-bit truecolour, as Chromium writes its screenshots), decoded with
    the standard library: [[(r, g, b), ...], ...]."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, hdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack("!I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            hdr = struct.unpack("!IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, ctype = hdr[:4]
    assert depth == 8 and ctype in (2, 6), "PNG depth %d type %d" % (depth, ctype)
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        ft = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            if ft == 1:
                line[i] = (line[i] + a) & 0xff
            elif ft == 2:
                line[i] = (line[i] + b) & 0xff
            elif ft == 3:
                line[i] = (line[i] + ((a + b) >> 1)) & 0xff
            elif ft == 4:
                c = prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xff
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(w)])
        prev = line
    return rows


WHITE = (255, 255, 255)


def drawn_runs(row):
    """The rectangles a scanline of the canvas crosses: [(first pixel, pixels, colour)], each a
    run of two or more pixels of one colour that is not the white background. A rectangle's
    edges that fall inside a pixel are blends (the page leaves half a pixel between neighbours),
    never its own colour: a run is the whole pixels of one rectangle, 2 fewer at most."""
    runs, x = [], 0
    while x < len(row):
        c, x0 = row[x], x
        while x < len(row) and row[x] == c:
            x += 1
        if c != WHITE and x - x0 >= 2:
            runs.append((x0, x - x0, c))
    return runs


ROW = 17  # the page's row pitch: a rectangle 16 pixels high, 1 pixel between rows


def screenshot_rows(c, x, y, w, h):
    data = c.call("Page.captureScreenshot", format="png",
                  clip={"x": x, "y": y, "width": w, "height": h, "scale": 1})["data"]
    import base64
    return png_pixels(base64.b64decode(data))


def drawn_tree(c):
    """What the browser drew: the canvas's pixels, read back from a screenshot, cut into
    rectangles row by row (the root's row found as the lowest band of colour at the left edge),
    each named by the tooltip the page shows over it. Returns [(depth, x, pixels, name, the
    tooltip's samples, its parent's index or None, whether its label has ink, its file:line)],
    the canvas's box (with the root's row and the rows that fit)."""
    c.call("Input.dispatchMouseEvent", type="mouseMoved", x=1, y=1)  # no tooltip over the canvas
    box = json.loads(c.eval("JSON.stringify(document.getElementById('c').getBoundingClientRect())"))
    left, top, width, height = box["x"], box["y"], int(box["width"]), int(box["height"])
    # the left edge's column: the root is the lowest band of colour (the graph sits on the bottom)
    col = screenshot_rows(c, left + 1, top, 1, height)
    ys = [y for y, r in enumerate(col) if r[0] != WHITE]
    assert ys, "nothing drawn at the canvas's left edge"
    root_bottom = ys[-1]
    root_top = root_bottom
    while root_top > 0 and col[root_top - 1][0] != WHITE:
        root_top -= 1
    assert root_bottom - root_top + 1 == ROW - 1, "the root's rectangle is %d pixels high" % (root_bottom - root_top + 1)
    nrows = root_top // ROW + 1
    band_top = root_top - (nrows - 1) * ROW
    pixels = screenshot_rows(c, left, top + band_top, width, nrows * ROW)
    rects = []
    for depth in range(nrows):
        y = (nrows - 1 - depth) * ROW  # the rectangle's first pixel row in the band
        runs = drawn_runs(pixels[y + 1])  # above its label's glyphs
        for x0, n, colour in runs:
            # the tooltip over its middle: what a user hovering it reads
            mx, my = left + x0 + n / 2, top + band_top + y + ROW / 2
            c.call("Input.dispatchMouseEvent", type="mouseMoved", x=mx, y=my)
            tip = c.eval("document.getElementById('tip').style.display === 'block' ? "
                         "document.getElementById('tip').textContent : ''")
            assert tip, "no tooltip over the rectangle at x %d, depth %d" % (x0, depth)
            lines = tip.split("\n")
            name = lines[0].rsplit(" (", 1)[0]
            # its file:line, when the frame has one (the line before the samples)
            where = lines[1] if len(lines) > 1 and not re.match(r"\d+ samples, ", lines[1]) else ""
            m = re.search(r"\n(\d+) samples, ", tip)
            assert m, tip
            # its label: dark pixels on the row through the middle, inside the rectangle
            mid = pixels[y + ROW // 2]
            ink = any(sum(mid[x]) < 200 for x in range(x0, x0 + n))
            parent = None
            if depth > 0:
                below = [i for i, r in enumerate(rects) if r[0] == depth - 1 and r[1] <= x0 + n / 2 < r[1] + r[2]]
                assert len(below) == 1, "the rectangle %r at depth %d stands on %d rectangles" % (name, depth, len(below))
                parent = below[0]
            rects.append((depth, x0, n, name, int(m.group(1)), parent, ink, where))
    c.call("Input.dispatchMouseEvent", type="mouseMoved", x=1, y=1)
    box["root_top"], box["rows"] = root_top, nrows
    return rects, box


def drawn_colours(c, box, rects):
    """The colour each of rects (drawn_tree's) is drawn in now: its scanline's pixel at its
    middle."""
    c.call("Input.dispatchMouseEvent", type="mouseMoved", x=1, y=1)  # no tooltip over the canvas
    rows = {}
    out = []
    for depth, x0, n, *_ in rects:
        y = box["root_top"] - depth * ROW + 1
        if y not in rows:
            rows[y] = screenshot_rows(c, box["x"], box["y"] + y, int(box["width"]), 1)[0]
        out.append(rows[y][x0 + n // 2])
    return out


def check_drawn(rects, width, tree, total, frameless, nrows, base=0, root="all"):
    """The drawn rectangles against the profile's tree as go tool pprof reads it: each one's
    path of names, its width in pixels (samples * width / total, less its two edge pixels at
    most) and its tooltip's samples; every frame wider than 4 pixels drawn; a label in every
    rectangle wide enough for one (the page writes one past 28 pixels: 30 drawn or more), none in
    narrower ones (25 drawn or fewer).
    base: the depth of the drawn root (a zoomed frame: tree then holds the paths below it)."""
    per = width / total
    paths = {}
    for k, r in enumerate(rects):
        if r[0] == base:
            paths[k] = ()
        elif r[0] > base:
            paths[k] = paths[r[5]] + (r[3],)
    top = [r for r in rects if r[0] == base]
    assert len(top) == 1 and top[0][3] == root and top[0][4] == total, "drawn root %s, %d samples" % (top, total)
    assert top[0][2] >= width - 2, "the root is %d pixels of %d" % (top[0][2], width)
    want = lambda path: tree.get(path, frameless if path == ("[no frames]",) else 0)  # noqa: E731
    drawn, count, tips = collections.Counter(), collections.Counter(), collections.Counter()
    for k, path in paths.items():
        if not path:
            continue
        assert want(path), "drawn %s: not in the profile" % " > ".join(path)
        # a name in two files under one parent: two rectangles, one pprof node; summed
        drawn[path] += rects[k][2]
        count[path] += 1
        tips[path] += rects[k][4]
    for path, px in drawn.items():
        lo, hi = want(path) * per - 2.5 * count[path], want(path) * per
        assert lo <= px <= hi + 0.01, "%s: %d pixels wide, %.1f-%.1f for pprof's %d samples of %d" % (
            " > ".join(path), px, lo, hi, want(path), total)
        assert tips[path] == want(path), "%s: the tooltips say %d samples, pprof %d" % (
            " > ".join(path), tips[path], want(path))
    missing = [p for p, n in tree.items() if n * per >= 4 and len(p) < nrows - base and p not in drawn]
    assert not missing, "frames of the profile not drawn: %s" % [" > ".join(p) for p in missing[:5]]
    for k, path in paths.items():
        r = rects[k]
        if r[2] >= 30:
            assert r[6], "%s: %d pixels wide, no label drawn" % (" > ".join(path) or root, r[2])
        elif r[2] <= 25:
            assert not r[6], "%s: %d pixels wide, a label drawn" % (" > ".join(path) or root, r[2])
    return len(paths)


def click(c, x, y):
    for t in ("mouseMoved", "mousePressed", "mouseReleased"):
        c.call("Input.dispatchMouseEvent", type=t, x=x, y=y, button="left", clickCount=1)


def test_flamegraph_chromium():
    """The flame graph page as Chromium drew it (its canvas's pixels in a screenshot, the page's
    tooltips over them) against the profile's tree as go tool pprof reads it."""
    need_chromium()
    page = report("flamegraph")
    tree, total, frameless, traces = pprof_tree(PROFILE)
    c = cdp.Chromium(1400, 900)
    try:
        c.open("file://" + page, "window.__ready === true")
        rects, box = drawn_tree(c)
        width = int(box["width"])
        drawn = check_drawn(rects, width, tree, total, frameless, box["rows"])
        os.makedirs(ARTIFACTS, exist_ok=True)
        c.screenshot(os.path.join(ARTIFACTS, "flamegraph.png"))
        # search: the samples under a frame matching /fib/, each counted once, and every drawn
        # frame whose name matches drawn in the highlight colour, no other
        want = sum(n for path, n in traces if any(re.search("fib", f, re.I) for f in path))
        c.eval("document.getElementById('search').value = 'fib'")
        c.eval("document.getElementById('search').dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter'}))")
        matched = c.eval("document.getElementById('matched').textContent")
        assert want > 0 and "matched: %d samples" % want in matched, "%r, want %d samples" % (matched, want)
        hl = drawn_colours(c, box, rects)
        for r, colour in zip(rects, hl):
            lit = colour == (230, 0, 230)
            # the page matches a frame's name or its file
            assert lit == bool(re.search("fib", r[3], re.I) or re.search("fib", r[7].rsplit(":", 1)[0], re.I)) or r[0] == 0, \
                "%s drawn %s after searching 'fib'" % (r[3], colour)
        c.eval("document.getElementById('search').value = ''")
        c.eval("document.getElementById('search').dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter'}))")
        # zoom by a real click on the widest frame at depth 2: it spans the width, its two
        # ancestors stay drawn at full width, its own frames are drawn to the new scale
        i = max((k for k, r in enumerate(rects) if r[0] == 2), key=lambda k: rects[k][2])
        target = rects[i]
        path = (rects[target[5]][3], target[3])
        click(c, box["x"] + target[1] + target[2] / 2, box["y"] + box["root_top"] - 2 * ROW + ROW / 2)
        tip = c.eval("document.getElementById('tip').textContent")
        assert tip.startswith(target[3] + " (") and "\n%d samples" % tree[path] in tip, tip
        assert c.eval("document.getElementById('status').textContent") == "zoomed: " + target[3]
        zrects, zbox = drawn_tree(c)
        for depth, name in ((0, "all"), (1, path[0])):
            row = [r for r in zrects if r[0] == depth]
            assert len(row) == 1 and row[0][3] == name and row[0][2] >= width - 2, \
                "zoomed on %s: depth %d drawn as %s" % (" > ".join(path), depth, [(r[3], r[2]) for r in row])
        sub = {p[2:]: n for p, n in tree.items() if p[:2] == path and len(p) > 2}
        check_drawn(zrects, width, sub, tree[path], 0, zbox["rows"], base=2, root=path[1])
        c.screenshot(os.path.join(ARTIFACTS, "flamegraph-zoomed.png"))
        # icicle: the root on top
        c.eval("document.getElementById('reset').click(); document.getElementById('toggle').click()")
        col = screenshot_rows(c, box["x"] + 1, box["y"], 1, int(box["height"]))
        top = next(y for y, r in enumerate(col) if r[0] != WHITE)
        c.call("Input.dispatchMouseEvent", type="mouseMoved", x=box["x"] + width / 2, y=box["y"] + top + ROW / 2)
        tip = c.eval("document.getElementById('tip').textContent")
        assert top == 0 and tip.startswith("all ("), "icicle: first drawn row at %d, tooltip %r" % (top, tip)
        c.screenshot(os.path.join(ARTIFACTS, "icicle.png"))
    finally:
        c.close()
    print("  %d rectangles drawn, checked against go tool pprof -traces" % drawn)


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


def group_of(path, regex):
    """The group of a stack (names from the root down) by --by frame:REGEX, computed here: its
    first frame from the root whose name matches."""
    return next((f for f in path if re.search(regex, f)), "(no frame matches)")


def test_oneshot_by_controllers():
    """--oneshot --by frame:Controller# on a script with two controllers: two groups whose shares
    are the script's own CPU time split (by its thread's CPU clock, within 12 points), whose
    samples are go tool pprof's traces grouped here, and whose flame graphs the page draws (one
    per group, chosen with its selector) as go tool pprof reads them."""
    if os.geteuid() != 0:
        raise Skip("--oneshot needs root")
    if not shutil.which("ruby"):
        raise Skip("missing: ruby (make deps installs it)")
    out, cpu_json = os.path.join(TMP, "ctl.pb.gz"), os.path.join(TMP, "ctl.json")
    regex = "Controller#"
    text = run([RUBYPROFD, "--oneshot", "-F", "199", "--by", "frame:" + regex, "--top", "5",
                "--format", "flamegraph", "-o", out, "--",
                "ruby", os.path.join(ROOT, "tests", "views", "controllers.rb"), cpu_json, "4"], timeout=120)
    m = re.search(r"^(\d+) samples in 1 profile, by frame:Controller#: (\d+) groups?$", text, re.M)
    assert m, text
    total = int(m.group(1))
    shown = {g: int(n) for g, n in re.findall(r"^(\S.*): [\d.]+% \((\d+) samples\)$", text, re.M)}
    cpu = json.load(open(cpu_json))
    names = ("OrdersController#index", "UsersController#show")
    assert all(shown.get(n, 0) >= 20 for n in names), "too few samples: %s\n%s" % (shown, text)
    ours = shown[names[0]] / (shown[names[0]] + shown[names[1]])
    theirs = cpu[names[0]] / (cpu[names[0]] + cpu[names[1]])
    assert abs(ours - theirs) <= 0.12, "Orders' share of the two: %.3f in the profile, %.3f by the script's clock (%s)" % (
        ours, theirs, cpu)
    # go tool pprof's traces, grouped here
    tree, ptotal, frameless, traces = pprof_tree(out)
    want = collections.Counter()
    for path, n in traces:
        want[group_of(path, regex)] += n
    if frameless > sum(n for p, n in traces if not p):
        want["(no frame matches)"] += frameless - sum(n for p, n in traces if not p)
    assert ptotal == total, "pprof's total %d, the summary's %d" % (ptotal, total)
    assert +want == collections.Counter(shown), "groups: pprof %s, summary %s" % (dict(want), shown)
    # speedscope: a profile per group, its weights the group's samples
    doc = json.load(open(report("speedscope", "--by", "frame:" + regex, profile=out)))
    assert {p["name"]: sum(p["weights"]) for p in doc["profiles"]} == shown, doc["profiles"][0]["name"]
    # the page: a graph per group; the Orders group chosen, drawn as pprof reads its traces
    need_chromium()
    page = os.path.join(TMP, "ctl.html")
    c = cdp.Chromium(1400, 900)
    try:
        c.open("file://" + page, "window.__ready === true")
        groups = json.loads(c.eval("JSON.stringify(window.__flame.groups)"))
        assert {g["name"]: g["value"] for g in groups} == shown, "page groups %s, summary %s" % (groups, shown)
        node = next(g["node"] for g in groups if g["name"] == names[0])
        c.eval("var s = document.getElementById('group'); s.value = '%d'; s.dispatchEvent(new Event('change'))" % node)
        status = c.eval("document.getElementById('status').textContent")
        assert status == "zoomed: " + names[0], status
        rects, box = drawn_tree(c)
        width = int(box["width"])
        sub = collections.Counter()
        for path, n in traces:
            if group_of(path, regex) == names[0]:
                for d in range(1, len(path) + 1):
                    sub[path[:d]] += n
        check_drawn(rects, width, dict(sub), shown[names[0]], 0, box["rows"], base=1, root=names[0])
        os.makedirs(ARTIFACTS, exist_ok=True)
        c.screenshot(os.path.join(ARTIFACTS, "flamegraph-group.png"))
    finally:
        c.close()
    print("  groups %s; Orders' share of the two %.3f, by the script's CPU clock %.3f" % (shown, ours, theirs))


def pprof_tags(profile, key):
    """go tool pprof -tags: samples per value of label key, and the profile's total."""
    env = dict(os.environ, HOME=TMP, GOCACHE=os.path.join(TMP, "gocache"), GOFLAGS="")
    out = run(["go", "tool", "pprof", "-tags", "-sample_index=samples", profile], env=env)
    values, block = {}, None
    for line in out.splitlines():
        m = re.match(r"\s*(\S+): Total ([\d.]+)$", line)
        if m:
            block = m.group(1)
            continue
        m = re.match(r"\s*([\d.]+) \(\s*[\d.]+%\): (.*)$", line)
        if m and block == key:
            values[m.group(2)] = int(float(m.group(1)))
    return values


def test_oneshot_by_thread_label():
    """--oneshot --by label:ruby_thread_name (a label already on every sample) on the two
    controllers in two named threads: the groups' split is the threads' own CPU clocks' (within
    12 points) and their samples are go tool pprof -tags' counts of the label."""
    if os.geteuid() != 0:
        raise Skip("--oneshot needs root")
    if not shutil.which("ruby"):
        raise Skip("missing: ruby (make deps installs it)")
    if not shutil.which("go"):
        raise Skip("missing: a go toolchain for go tool pprof (make deps installs golang-go)")
    out, cpu_json = os.path.join(TMP, "thr.pb.gz"), os.path.join(TMP, "thr.json")
    text = run([RUBYPROFD, "--oneshot", "-F", "199", "--by", "label:ruby_thread_name", "--top", "3",
                "-o", out, "--", "ruby", os.path.join(ROOT, "tests", "views", "controllers.rb"), cpu_json,
                "4", "threads"], timeout=120)
    m = re.search(r"^(\d+) samples in 1 profile, by label:ruby_thread_name: \d+ groups?$", text, re.M)
    assert m, text
    total = int(m.group(1))
    shown = {g: int(n) for g, n in re.findall(r"^(\S.*): [\d.]+% \((\d+) samples\)$", text, re.M)}
    tags = pprof_tags(out, "ruby_thread_name")
    want = {"ruby_thread_name=" + k: n for k, n in tags.items()}
    if total > sum(tags.values()):
        want["(no ruby_thread_name)"] = total - sum(tags.values())
    assert shown == want, "groups %s, go tool pprof -tags %s" % (shown, want)
    cpu = json.load(open(cpu_json))
    o, u = shown.get("ruby_thread_name=orders", 0), shown.get("ruby_thread_name=users", 0)
    assert o >= 20 and u >= 20, "too few samples: %s" % shown
    ours = o / (o + u)
    theirs = cpu["OrdersController#index"] / (cpu["OrdersController#index"] + cpu["UsersController#show"])
    assert abs(ours - theirs) <= 0.12, "the orders thread's share: %.3f in the profile, %.3f by its clock" % (ours, theirs)
    print("  groups %s; the orders thread's share %.3f, by the threads' CPU clocks %.3f" % (shown, ours, theirs))


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
