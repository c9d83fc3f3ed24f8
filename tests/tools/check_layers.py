#!/usr/bin/env python3
"""check_layers.py - the daemon's layers, checked from its #include lines.

    python3 tests/tools/check_layers.py [REPO]

Each folder of daemon/ is a layer and may include headers only from the
layers below it (and from proto/'s generated code and error table, the
system and its libraries).  libclient/ (libcut) includes nothing of daemon/; its
protocol core, libclient/core/ (pure), includes only the public header,
and the simulation (daemon/sim) runs it (so it sees that header too); its
command-line client, libclient/cutctl/, may include the base layer (the
cluster file).  A layer's internal/ folder (a PRIVATE include directory
of its library) holds headers that only its own folder may include.
And no header of ours may include itself through others:
the check looks for cycles among every #include "..." of daemon/ and
libclient/.  Prints each violation and exits 1 if there is any.
"""
import os
import re
import sys

# Layer -> the layers it may include, itself first.
ALLOWED = {
    "daemon/base": ["daemon/base"],
    "daemon/core": ["daemon/core", "daemon/base"],
    "daemon/store": ["daemon/store", "daemon/core", "daemon/base"],
    "daemon/lab": ["daemon/lab", "daemon/core", "daemon/base"],
    "daemon/sim": ["daemon/sim", "daemon/lab", "daemon/store", "daemon/core",
                   "daemon/base", "libclient/core", "libclient/include/cut"],
    "daemon/shell": ["daemon/shell", "daemon/store", "daemon/core",
                     "daemon/base"],
    "libclient": ["libclient", "libclient/core", "libclient/include/cut"],
    "libclient/core": ["libclient/core", "libclient/include/cut"],
    "libclient/include/cut": ["libclient/include/cut"],
    "libclient/cutctl": ["libclient/cutctl", "libclient",
                         "libclient/include/cut", "daemon/base"],
}
# Headers outside these folders that anyone may include: proto/'s own
# helpers and protobuf-c's generated code, and the one error table
# (proto/errtab.h, which includes nothing: each side names only its own
# columns of it).
COMMON = {"cutproto.h", "errtab.h"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def self_test():
    """A tree with a cycle and a layer broken must fail, and the same
    tree mended must pass: the check can fail."""
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory() as t:
        for folder in ALLOWED:
            os.makedirs(os.path.join(t, folder))

        def put(path, text):
            with open(os.path.join(t, path), "w") as f:
                f.write(text)
        put("daemon/core/a.h", '#include "b.h"\n')
        put("daemon/core/b.h", '#include "a.h"\n')
        put("daemon/core/c.c", '#include "cutd.h"\n')
        put("daemon/shell/cutd.h", '#include "a.h"\n')
        os.makedirs(os.path.join(t, "daemon/core/internal"))
        put("daemon/core/internal/i.h", "\n")
        put("daemon/core/d.c", '#include "i.h"\n')
        put("daemon/store/s.c", '#include "i.h"\n')
        bad = subprocess.run([sys.executable, __file__, t],
                             capture_output=True, text=True)
        put("daemon/core/b.h", "\n")
        put("daemon/core/c.c", '#include "a.h"\n')
        put("daemon/store/s.c", "\n")
        good = subprocess.run([sys.executable, __file__, t],
                              capture_output=True, text=True)
    ok = (bad.returncode == 1 and "include cycle" in bad.stdout and
          "may only include" in bad.stdout and
          "internal to daemon/core" in bad.stdout and good.returncode == 0)
    print("self-test", "passed" if ok else "FAILED")
    if not ok:
        print(bad.stdout, good.stdout)
    return 0 if ok else 1


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    files = {}  # path relative to root -> folder
    for folder in ALLOWED:
        for sub in (folder, os.path.join(folder, "internal")):
            d = os.path.join(root, sub)
            if not os.path.isdir(d):
                continue
            for name in sorted(os.listdir(d)):
                if name.endswith((".c", ".h")):
                    files[os.path.join(sub, name)] = folder
    by_name = {}
    for path, folder in files.items():
        by_name.setdefault(os.path.basename(path), []).append(path)
        if path.startswith("libclient/include/"):
            by_name.setdefault("cut/" + os.path.basename(path),
                               []).append(path)
    errors = []
    graph = {}
    for path, folder in sorted(files.items()):
        with open(os.path.join(root, path), encoding="utf-8") as f:
            text = f.read()
        graph[path] = []
        for inc in INCLUDE.findall(text):
            if inc in COMMON or inc.startswith("cut/v1/"):
                continue
            # The including folder first, as the compiler looks.
            cands = by_name.get(inc, []) + by_name.get(
                os.path.basename(inc), [])
            cands.sort(key=lambda p: files[p] != folder)
            if not cands:
                errors.append(f"{path}: includes \"{inc}\", which is "
                              f"not in any layer")
                continue
            target = cands[0]
            graph[path].append(target)
            if files[target] not in ALLOWED[folder]:
                errors.append(f"{path}: includes {target}, but "
                              f"{folder} may only include "
                              f"{', '.join(ALLOWED[folder])}")
            elif "/internal/" in target and files[target] != folder:
                errors.append(f"{path}: includes {target}, which is "
                              f"internal to {files[target]}")
    # Cycles, by depth-first search.
    state = {}
    stack = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in graph.get(node, []):
            if state.get(nxt) == 1:
                cyc = stack[stack.index(nxt):] + [nxt]
                errors.append("include cycle: " + " -> ".join(cyc))
            elif state.get(nxt) is None:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if state.get(node) is None:
            visit(node)
    for e in errors:
        print(e)
    n = sum(len(v) for v in graph.values())
    print(f"check_layers: {len(files)} files, {n} includes, "
          f"{len(errors)} problems")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
