#!/usr/bin/env python3
"""config_reference.py - the cluster file's reference in the documents is
the schema's.

    config_reference.py CUTD REPO             check
    config_reference.py --update CUTD REPO    rewrite the documents
    config_reference.py --self-test CUTD REPO the check can fail

Every key of the cluster file, with its type, default, range and what
SIGHUP does with it, is one row of daemon/base/config_schema.c, and
`cutd --print-config-reference markdown|man` writes them.  README.md and
deploy/man/cutd.8 carry that text between two marker lines; the check
fails, with a diff and the command that mends it, when what a document
carries is not what cutd writes, so that no key can be documented with a
range or a default it does not have.  --update writes cutd's text between
the markers (after a change to the table: cmake --build build --target
config-reference).  Python 3, standard library only.
"""

import difflib
import os
import shutil
import subprocess
import sys
import tempfile

# (document, format, begin marker, end marker)
DOCS = [
    ("README.md", "markdown",
     "<!-- BEGIN config-reference: written by cutd "
     "--print-config-reference markdown; edit daemon/base/config_schema.c, "
     "then cmake --build build --target config-reference -->",
     "<!-- END config-reference -->"),
    ("deploy/man/cutd.8", "man",
     '.\\" BEGIN config-reference: written by cutd '
     "--print-config-reference man; edit daemon/base/config_schema.c, "
     "then cmake --build build --target config-reference",
     '.\\" END config-reference'),
]


def generated(cutd, fmt):
    out = subprocess.run([cutd, "--print-config-reference", fmt],
                         capture_output=True, text=True)
    if out.returncode != 0 or out.stderr:
        sys.exit(f"{cutd} --print-config-reference {fmt} failed "
                 f"({out.returncode}): {out.stderr}")
    return out.stdout.splitlines(keepends=True)


def split(path, begin, end):
    """The document's lines before its region (through the begin marker),
    in it, and after it (from the end marker)."""
    with open(path, encoding="utf-8") as f:
        lines = f.readlines()
    starts = [i for i, l in enumerate(lines) if l.rstrip("\n") == begin]
    ends = [i for i, l in enumerate(lines) if l.rstrip("\n") == end]
    if len(starts) != 1 or len(ends) != 1 or ends[0] < starts[0]:
        sys.exit(f"{path}: expected one line\n  {begin}\nthen one line\n"
                 f"  {end}\naround the reference of the cluster file")
    return lines[:starts[0] + 1], lines[starts[0] + 1:ends[0]], \
        lines[ends[0]:]


def check(cutd, repo):
    bad = 0
    for doc, fmt, begin, end in DOCS:
        path = os.path.join(repo, doc)
        _, have, _ = split(path, begin, end)
        want = generated(cutd, fmt)
        if have != want:
            bad += 1
            sys.stdout.writelines(difflib.unified_diff(
                have, want, f"{doc} (committed)",
                f"cutd --print-config-reference {fmt}"))
            print(f"FAIL: {doc} does not carry the schema's reference; "
                  f"run: cmake --build build --target config-reference")
        else:
            print(f"ok: {doc} carries the schema's reference "
                  f"({len(want)} lines)")
    return 1 if bad else 0


def update(cutd, repo):
    for doc, fmt, begin, end in DOCS:
        path = os.path.join(repo, doc)
        head, have, tail = split(path, begin, end)
        want = generated(cutd, fmt)
        if have != want:
            with open(path, "w", encoding="utf-8") as f:
                f.writelines(head + want + tail)
            print(f"{doc}: reference rewritten")
    return 0


def self_test(cutd, repo):
    """A copy of the documents with one range changed must fail the
    check, and the copies as committed must pass it."""
    with tempfile.TemporaryDirectory() as t:
        for doc, _, _, _ in DOCS:
            os.makedirs(os.path.dirname(os.path.join(t, doc)) or t,
                        exist_ok=True)
            shutil.copy(os.path.join(repo, doc), os.path.join(t, doc))
        quiet = open(os.devnull, "w")
        good = subprocess.run([sys.executable, __file__, cutd, t],
                              stdout=quiet).returncode
        doc, _, begin, end = DOCS[0]
        head, region, tail = split(os.path.join(t, doc), begin, end)
        text = "".join(region)
        if "from 100 to 3600000" not in text:
            print(f"self-test FAILED: {doc} has no deadline_ms range")
            return 1
        with open(os.path.join(t, doc), "w", encoding="utf-8") as f:
            f.writelines(head + [text.replace("from 100 to 3600000",
                                              "from 100 to 7200000", 1)]
                         + tail)
        bad = subprocess.run([sys.executable, __file__, cutd, t],
                             stdout=quiet).returncode
    ok = good == 0 and bad == 1
    print("self-test", "passed" if ok else
          f"FAILED (as committed: {good}, a range changed: {bad})")
    return 0 if ok else 1


def main():
    args = sys.argv[1:]
    mode = check
    if args and args[0] in ("--update", "--self-test"):
        mode = update if args[0] == "--update" else self_test
        args = args[1:]
    if len(args) != 2:
        sys.exit(__doc__)
    return mode(args[0], args[1])


if __name__ == "__main__":
    sys.exit(main())
