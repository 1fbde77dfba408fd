#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
# Every relative link (and #anchor) of README.md and docs/**/*.md resolves: scripts/check-links.py [ROOT]
import os, re, sys, glob
root = sys.argv[1] if len(sys.argv) > 1 else '.'
files = [os.path.join(root, 'README.md')] + glob.glob(os.path.join(root, 'docs/**/*.md'), recursive=True)
def slug(h):
    h = h.strip().lower()
    h = re.sub(r'[^\w\- ]', '', h)
    return h.replace(' ', '-')
def anchors(path):
    s = open(path).read()
    s = re.sub(r'```.*?```', '', s, flags=re.S)
    out, seen = set(), {}
    for m in re.finditer(r'^#+\s+(.*)$', s, re.M):
        a = slug(m.group(1))
        n = seen.get(a, 0); seen[a] = n + 1
        out.add(a if n == 0 else f'{a}-{n}')
    return out
bad = 0
for f in files:
    text = open(f).read()
    text_nc = re.sub(r'```.*?```', '', text, flags=re.S)
    for m in re.finditer(r'\]\(([^)\s]+)\)', text_nc):
        link = m.group(1)
        if re.match(r'^[a-z]+:', link): continue
        path, _, frag = link.partition('#')
        target = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
        if not os.path.exists(target):
            print(f'{f}: {link}: no such file'); bad += 1; continue
        if frag and target.endswith('.md') and frag not in anchors(target):
            print(f'{f}: {link}: no such anchor'); bad += 1
print(f'{len(files)} files, {bad} broken links')
sys.exit(1 if bad else 0)
