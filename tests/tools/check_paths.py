#!/usr/bin/env python3
"""check_paths.py - every repository path named in the code, the build and
the documentation exists.

    python3 tests/tools/check_paths.py [REPO]

Scans comments and strings of C sources and headers, CMake files, shell
and Python scripts, Markdown and man pages for names such as
`daemon/core/coord.c` or `tests/tools/check_layers.py` (a path under one
of the repository's top folders, with an extension), and prints each one
that names no file or folder.  Placeholders (NAME in capitals) are
allowed.  Exits 1 if any path is stale.
"""
import os
import re
import sys

TOPS = ("daemon", "libclient", "tests", "deploy", "examples", "proto", ".ci")
PATH = re.compile(r"(?<![\w./-])((?:%s)/[\w./-]*\.(?:c|h|py|sh|md|txt|proto|"
                  r"patch|sql|service|conf|html|js|[1-8]))(?![\w-])" %
                  "|".join(re.escape(t) for t in TOPS))
# A path inside daemon/ or libclient/ named from there ("shell/port.c").
REL = re.compile(r"(?<![\w./-])((?:base|core|store|shell|lab|sim|web|cutctl)/"
                 r"\w+\.(?:c|h|html|js))(?![\w-])")
REL_ROOTS = ("daemon", "libclient", "")
# Files that name paths of a tree they make (check_layers.py's self-test).
SKIP_FILES = {"tests/tools/check_layers.py"}
SCAN = re.compile(r"(\.(c|h|py|sh|md|txt|proto|[1-8])|CMakeLists\.txt)$")
SKIP_DIRS = {".git", "build", "build-asan", "build-bench", "build-fuzz"}


def stale(repo):
    bad = []
    for root, dirs, files in os.walk(repo):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and
                   not d.startswith("build")]
        for f in files:
            if not SCAN.search(f):
                continue
            path = os.path.join(root, f)
            if os.path.relpath(path, repo) in SKIP_FILES:
                continue
            try:
                text = open(path, encoding="utf-8").read()
            except (UnicodeDecodeError, OSError):
                continue
            for n, line in enumerate(text.splitlines(), 1):
                for m in PATH.finditer(line):
                    name = m.group(1).rstrip(".")
                    if "NAME" in name or "-name." in name or "NN" in name:
                        continue
                    if os.path.exists(os.path.join(repo, name)):
                        continue
                    bad.append("%s:%d: %s" %
                               (os.path.relpath(path, repo), n, name))
                for m in REL.finditer(line):
                    name = m.group(1)
                    if any(os.path.exists(os.path.join(repo, r, name))
                           for r in REL_ROOTS):
                        continue
                    bad.append("%s:%d: %s" %
                               (os.path.relpath(path, repo), n, name))
    return bad


def main():
    repo = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..")
    bad = stale(os.path.abspath(repo))
    for b in bad:
        print("stale path: " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
