#!/usr/bin/env python3
"""Checks that every `#[test]` function of the integration tests at REV (the
base of the move) is still there, letter for letter, in the working tree:
compares each test function's text (attributes, signature and body, blank
lines folded; `zk_framework::proto::` read as `zk_proto::`, the same module
re-exported, which zk-testing's tests name directly) by name. Prints the tests whose text differs or is missing.

Usage: python3 docs/test-moves/same-bodies.py REV  (from the workspace root)
"""
import re, subprocess, sys, glob

def tests_in(text):
    out = {}
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if lines[i].strip() == "#[test]":
            j = i + 1
            while not re.match(r"\s*(pub )?fn ", lines[j]):
                j += 1
            name = re.match(r"\s*(?:pub )?fn ([A-Za-z0-9_]+)", lines[j]).group(1)
            indent = len(lines[i]) - len(lines[i].lstrip())
            k = j
            while not (lines[k].startswith(" " * indent + "}") and len(lines[k]) - len(lines[k].lstrip()) == indent):
                k += 1
            body = "\n".join(l for l in lines[i:k + 1] if l.strip()).replace("zk_framework::proto::", "zk_proto::")
            out.setdefault(name, []).append(re.sub(r"^ {%d}" % indent, "", body, flags=re.M))
            i = k + 1
        else:
            i += 1
    return out

rev = sys.argv[1]
old_files = subprocess.run(["git", "ls-tree", "-r", "--name-only", rev, "--", "tests", "crates"],
                           capture_output=True, text=True, check=True).stdout.split()
old_files = [f for f in old_files if re.match(r"(tests/.*|crates/[^/]+/tests/.*)\.rs$", f)]
old = {}
for f in old_files:
    text = subprocess.run(["git", "show", f"{rev}:{f}"], capture_output=True, text=True, check=True).stdout
    for n, bodies in tests_in(text).items():
        old.setdefault(n, []).extend(bodies)
new = {}
for f in glob.glob("tests/**/*.rs", recursive=True) + glob.glob("crates/*/tests/**/*.rs", recursive=True):
    for n, bodies in tests_in(open(f).read()).items():
        new.setdefault(n, []).extend(bodies)
bad = 0
for n, bodies in sorted(old.items()):
    if sorted(bodies) != sorted(new.get(n, [])):
        bad += 1
        print(f"DIFFERS: {n}")
print(f"{sum(len(b) for b in old.values())} test functions at {rev}, "
      f"{sum(len(b) for b in new.values())} now; {bad} differ")
sys.exit(1 if bad else 0)
