#!/usr/bin/env python3
"""List every test of the workspace, one line per test: `BINARY<TAB>TEST`.

BINARY is `package:kind:target` (kind: lib, bin, test, doc). Builds with
`cargo test --no-run --message-format=json`, then runs each test executable
with `--list --format terse`; the doc tests come from
`cargo test --doc -- --list`. Extra feature runs (zk-recipes' `metrics`,
zk-lock's `embedded`) are listed under BINARY `...+feature`.

Usage: python3 docs/test-moves/list-tests.py > list.tsv  (from the workspace root)
"""
import json, subprocess, sys, re

def run(cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout

def executables(extra, suffix=""):
    out = run(["cargo", "test", "--no-run", "--message-format=json"] + extra)
    for line in out.splitlines():
        msg = json.loads(line)
        if msg.get("reason") != "compiler-artifact" or not msg.get("executable"):
            continue
        if not msg["profile"]["test"]:
            continue
        pkg = msg["package_id"]
        m = re.search(r"#([A-Za-z0-9_-]+)@", pkg) or re.search(r"/([A-Za-z0-9_-]+)#", pkg) or re.search(r"^(\S+) ", pkg)
        name = m.group(1) if m else pkg
        kind = msg["target"]["kind"][0]
        yield f"{name}:{kind}:{msg['target']['name']}{suffix}", msg["executable"]

def tests_of(exe):
    out = run([exe, "--list", "--format", "terse"])
    for line in out.splitlines():
        if line.endswith(": test"):
            yield line[: -len(": test")]

def main():
    rows = []
    runs = [(["--workspace"], ""),
            (["-p", "zk-recipes", "--features", "metrics", "--test", "metrics"], "+metrics"),
            (["-p", "zk-lock", "--features", "embedded"], "+embedded")]
    for extra, suffix in runs:
        for binary, exe in executables(extra, suffix):
            if suffix and not binary.startswith(("zk-recipes:test:metrics", "zk-lock")):
                continue
            for t in tests_of(exe):
                rows.append((binary, t))
    # cargo prints "Doc-tests CRATE" on stderr and the lists on stdout, in order; run per package
    # instead so that the two streams need not be interleaved.
    pkgs = json.loads(run(["cargo", "metadata", "--no-deps", "--format-version", "1"]))["packages"]
    for p in sorted(pkgs, key=lambda p: p["name"]):
        if not any("lib" in t["kind"] for t in p["targets"]):
            continue
        out = subprocess.run(["cargo", "test", "-p", p["name"], "--doc", "--", "--list", "--format", "terse"],
                             capture_output=True, text=True).stdout
        for line in out.splitlines():
            if line.endswith(": test"):
                rows.append((f"{p['name']}:doc", line[: -len(": test")]))
    for b, t in sorted(set(rows)):
        print(f"{b}\t{t}")

if __name__ == "__main__":
    main()
