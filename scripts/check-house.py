#!/usr/bin/env python3
"""The house check: imports only point down.

For every crate of the workspace (crates/*/src and the root package's src if
any), reads each `.rs` file's `use` declarations and `crate::`/`super::`
paths in code (not in comments or strings), resolves each to the file that
defines the module it names, and fails

  * on an import circle: files that import each other in a loop (any crate);
  * on an import against the declared layer order (LAYERS below): a file may
    import its own group or a group of a lower layer, never one above it.

Each arrow is a file importing a module of its own crate (another crate's
items are that crate's business: Cargo already forbids circles between
crates). A folder's `mod.rs` declaring its children (`mod x;`) is not an
arrow; a child importing what its `mod.rs` defines is.

Usage: scripts/check-house.py [--graph CRATE] [--root DIR]
Exit 0 when the house is sound, 1 with every circle and every arrow up named.
"""
import os
import re
import sys

# Layers, top first. A group is a module path prefix of its crate
# (`locks` is src/locks.rs or src/locks/); `lib` is src/lib.rs. Every module
# of a crate named here must be in a group (a new room is declared here).
LAYERS = {
    "zk-recipes": [
        ["lib", "paths"],
        ["inspect"],
        ["discovery", "partition"],
        ["nodes"],
        ["leader", "cache", "atomic", "queue", "barriers"],
        ["locks", "shared", "watch"],
        ["core"],
        ["error"],
        ["freshness"],
    ],
    "zk-framework": [
        ["lib"],
        ["recipe"],
        ["framework"],
        ["client"],
        ["retry", "state", "deadline", "paths", "metrics"],
        ["error"],
    ],
}

USE_RE = re.compile(r"\buse\s+((?:crate|super|self)(?:::[A-Za-z_][A-Za-z0-9_]*)*)(::\{[^;]*\}|::\*)?\s*(?:as\s+\w+\s*)?;", re.S)
PATH_RE = re.compile(r"(?<![A-Za-z0-9_:])((?:crate|super)(?:::[A-Za-z_][A-Za-z0-9_]*)+)")


def strip_comments_and_strings(src):
    """The code of `src` with comments, strings and char literals blanked."""
    out = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
        elif src.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if src.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif src.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif c == "r" and re.match(r'r#*"', src[i:i + 10]) and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")):
            m = re.match(r'r(#*)"', src[i:])
            end = '"' + m.group(1)
            j = src.find(end, i + len(m.group(0)))
            i = n if j < 0 else j + len(end)
            out.append('""')
        elif c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            i = j + 1
            out.append('""')
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", src[i:i + 4]):
            i += len(re.match(r"'(\\.[^']*|[^\\'])'", src[i:]).group(0))
        else:
            out.append(c)
            i += 1
    return "".join(out)


def inline_modules(code):
    """The spans of inline modules (`mod x { .. }`) in `code`."""
    spans = []
    for m in re.finditer(r"\bmod\s+\w+\s*\{", code):
        depth, i = 0, m.end() - 1
        while i < len(code):
            depth += code[i] == "{"
            depth -= code[i] == "}"
            if depth == 0:
                break
            i += 1
        spans.append((m.end(), i))
    return spans


def module_of(src_dir, path):
    """`src/a/b.rs` -> ['a', 'b']; `src/a/mod.rs` -> ['a']; `src/lib.rs` -> []."""
    rel = os.path.relpath(path, src_dir)[:-3].split(os.sep)
    if rel[-1] == "mod":
        rel = rel[:-1]
    if rel == ["lib"] or rel == ["main"]:
        return []
    return rel


def crates(root):
    for base in [os.path.join(root, "crates", d) for d in sorted(os.listdir(os.path.join(root, "crates")))] + [root]:
        src = os.path.join(base, "src")
        if os.path.isfile(os.path.join(base, "Cargo.toml")) and os.path.isdir(src):
            yield os.path.basename(base) if base != root else "(root)", src


def files_of(src):
    for dirpath, _, names in os.walk(src):
        for name in sorted(names):
            if name.endswith(".rs"):
                yield os.path.join(dirpath, name)


def expand_use(prefix, tree):
    """`use a::{b, c::{d, e}}` -> [a::b, a::c::d, a::c::e] (names only)."""
    if not tree or tree == "::*":
        return [prefix]
    inner = tree[3:-1]
    parts, depth, cur = [], 0, ""
    for ch in inner:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    parts.append(cur)
    out = []
    for p in parts:
        p = re.sub(r"\s+as\s+\w+\s*$", "", p.strip())
        if not p or p == "self":
            out.append(prefix)
            continue
        m = re.match(r"([A-Za-z_][A-Za-z0-9_:]*?)(::\{.*\}|::\*)?$", p, re.S)
        if m:
            out.extend(expand_use(prefix + "::" + m.group(1), m.group(2)))
    return out


def graph(src):
    mods = {}
    for f in files_of(src):
        mods[tuple(module_of(src, f))] = f
    edges = {}
    for m, f in mods.items():
        code = strip_comments_and_strings(open(f, encoding="utf-8").read())
        # test modules are not part of the house
        for t in re.finditer(r"#\[cfg\(test\)\]\s*(?:pub(?:\(crate\))?\s+)?mod\s+\w+\s*\{", code):
            a, b = next((sp for sp in inline_modules(code[t.start():]) if True), (0, 0))
            code = code[: t.start()] + " " * (b + 1) + code[t.start() + b + 1 :]
        inline = inline_modules(code)
        paths = []
        for um in USE_RE.finditer(code):
            paths.extend((p, um.start()) for p in expand_use(um.group(1), um.group(2)))
        paths.extend((pm.group(1), pm.start()) for pm in PATH_RE.finditer(code))
        here = list(m)
        for p, at in paths:
            segs = p.split("::")
            if segs[0] == "crate":
                target = segs[1:]
            else:
                # `super` inside an inline `mod x { .. }` first leaves it
                # (staying in this file), then climbs the file's modules.
                depth = sum(1 for a, b in inline if a < at < b)
                base = list(here)
                while segs and segs[0] in ("super", "self"):
                    if segs[0] == "super":
                        if depth:
                            depth -= 1
                        else:
                            base = base[:-1]
                    segs = segs[1:]
                target = base + segs
            # the longest prefix that is a file
            t = None
            for k in range(len(target), -1, -1):
                if tuple(target[:k]) in mods:
                    t = tuple(target[:k])
                    break
            if t is None or t == m:
                continue
            # `mod.rs` naming its own children (`pub use child::X`) hands on,
            # and a re-export of the crate root is the facade: not arrows
            # that the layering judges, but circles still count them.
            edges.setdefault(m, set()).add(t)
    return mods, edges


def sccs(nodes, edges):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in nodes:
        if v not in index:
            visit(v)
    return out


def name(m):
    return "::".join(m) if m else "lib"


def group_of(layers, m):
    key = m[0] if m else "lib"
    for i, layer in enumerate(layers):
        if key in layer:
            return i, key
    return None, key


def main():
    args = sys.argv[1:]
    root = "."
    if "--root" in args:
        root = args[args.index("--root") + 1]
    show = args[args.index("--graph") + 1] if "--graph" in args else None
    problems = []
    for crate, src in crates(root):
        mods, edges = graph(src)
        if show == crate:
            for m in sorted(edges):
                print(f"{name(m)} -> {', '.join(sorted(name(t) for t in edges[m]))}")
        for comp in sccs(list(mods), edges):
            files = ", ".join(os.path.relpath(mods[m], root) for m in comp)
            problems.append(f"{crate}: import circle: {files}")
        layers = LAYERS.get(crate)
        if not layers:
            continue
        for m in mods:
            i, key = group_of(layers, m)
            if i is None:
                problems.append(f"{crate}: {os.path.relpath(mods[m], root)}: its room `{key}` has no layer (declare it in scripts/check-house.py)")
        for m, ts in sorted(edges.items()):
            i, g = group_of(layers, m)
            for t in sorted(ts):
                j, h = group_of(layers, t)
                if i is None or j is None or g == h:
                    continue
                if j <= i and not (m == () or g in ("lib",)):
                    problems.append(
                        f"{crate}: {os.path.relpath(mods[m], root)} (layer {i + 1}, `{g}`) imports "
                        f"{name(t)} (layer {j + 1}, `{h}`): an arrow up or sideways"
                    )
    for p in problems:
        print(p)
    if problems:
        print(f"the house check failed: {len(problems)} problem(s)")
        return 1
    print("the house check passed: no import circle; every declared layer imports only below it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
