#!/usr/bin/env python3
# Counts the public items (all.html) and the inherent/trait methods on the type pages of
# `cargo doc` output: python3 scripts/count-public-items.py target/doc zk_framework zk_recipes
import sys, os, re, glob
root = sys.argv[1]
for crate in sys.argv[2:]:
    d = os.path.join(root, crate)
    allp = os.path.join(d, 'all.html')
    if not os.path.exists(allp):
        print(crate, 'no docs'); continue
    s = open(allp).read()
    items = re.findall(r'<li><a href="([^"]+)"', s)
    kinds = {}
    for h in items:
        k = os.path.basename(h).split('.')[0]
        kinds[k] = kinds.get(k, 0) + 1
    # methods: inherent + trait-impl methods documented on type pages (unique per page)
    methods = 0
    for f in glob.glob(os.path.join(d, '**', '*.html'), recursive=True):
        b = os.path.basename(f)
        if b.startswith(('struct.', 'enum.', 'trait.', 'type.')):
            t = open(f).read()
            # inherent methods only: section "implementations-list"
            m = re.search(r'id="implementations-list">(.*?)(?:<h2 id="trait-implementations"|<h2 id="synthetic|<h2 id="blanket|$)', t, re.S)
            if m:
                methods += len(set(re.findall(r'id="(method\.[A-Za-z0-9_]+)"', m.group(1))))
            if b.startswith('trait.'):
                methods += len(set(re.findall(r'id="(tymethod\.[A-Za-z0-9_]+|method\.[A-Za-z0-9_]+)"', t.split('id="implementors"')[0])))
    mods = len([h for h in items]) 
    print(f"{crate}: items {len(items)} {dict(sorted(kinds.items()))}, inherent/trait methods {methods}")
