#!/usr/bin/env python3
"""check_layers_build.py - the build itself refuses a wrong-way include.

    python3 tests/tools/check_layers_build.py REPO BUILD
    python3 tests/tools/check_layers_build.py --self-test REPO BUILD

check_layers.py reads the #include lines; this asks the compiler.  For
every source file of a layer (a folder of check_layers.py's ALLOWED
table) that BUILD/compile_commands.json compiles, it takes that file's
own flags (its target's include directories, those of the libraries it
links, its definitions) and asks the preprocessor, with them, where a file that holds one
#include "NAME" finds NAME, for each header of a layer the table does not
allow that one, and for each header of another layer's internal/ folder
(a PRIVATE include directory): it must not find our header (no include directory of
that target holds it; the include fails, or finds a system header of
that name, such as <link.h>).
A file's own folder is reachable through the quoted form anyway; every
other folder only through an include directory, which a target gets
from itself and from the libraries it links.  So a layer's library that
linked an upper layer, or made an upper folder an include directory, is
caught here as a header it could include.  Each file itself must
preprocess with the same flags (so that the flags are the real ones).

An include written with a relative path ("../shell/cutd.h") is found
whatever the include directories say: only check_layers.py catches that.

--self-test adds the shell's folder to the flags of a core file and
expects the check to name every shell header, and the core's internal/
folder to a store file's and expects it to name each internal header;
the core file as it is must pass: the check can fail.  Exits 1 on any problem.
"""
import json
import os
import shlex
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_layers import ALLOWED  # noqa: E402

# Flags that decide what an #include finds (the rest are dropped).
WITH_ARG = ("-I", "-isystem", "-iquote", "-idirafter", "-D", "-U",
            "-include")


def include_name(folder, header):
    """How a header is included: libcut's public one as cut/NAME."""
    if folder == "libclient/include/cut":
        return "cut/" + header
    return header


def headers(repo):
    """Folder -> its headers, as (include name, path in the repository):
    its own, then those of its internal/ folder."""
    out = {}
    for folder in ALLOWED:
        out[folder] = []
        for sub in (folder, os.path.join(folder, "internal")):
            d = os.path.join(repo, sub)
            if os.path.isdir(d):
                out[folder] += [(include_name(folder, n),
                                 os.path.join(sub, n))
                                for n in sorted(os.listdir(d))
                                if n.endswith(".h")]
    return out


def flags(args):
    """The include-deciding flags of one compile command."""
    keep = []
    i = 1
    while i < len(args):
        a = args[i]
        if a in WITH_ARG and i + 1 < len(args):
            keep += [a, args[i + 1]]
            i += 2
            continue
        if a.startswith(WITH_ARG) or a.startswith("-std="):
            keep.append(a)
        i += 1
    return keep


def entries(repo, build):
    """(folder, compiler, flags, source) of each layer's compiled file,
    one per folder and set of flags."""
    with open(os.path.join(build, "compile_commands.json")) as f:
        db = json.load(f)
    seen = {}
    for e in db:
        src = os.path.realpath(os.path.join(e["directory"], e["file"]))
        rel = os.path.relpath(src, os.path.realpath(repo))
        folder = os.path.dirname(rel)
        if folder not in ALLOWED:
            continue
        args = e["arguments"] if "arguments" in e else shlex.split(
            e["command"])
        key = (folder, tuple(flags(args)))
        seen.setdefault(key, (folder, args[0], list(key[1]), src))
    return list(seen.values())


def preprocess(cc, fl, path):
    r = subprocess.run([cc] + fl + ["-E", "-o", os.devnull, path],
                       capture_output=True, text=True)
    return r.returncode, r.stderr


def found(cc, fl, path):
    """The files an include of path finds, as real paths (-M -MG: what
    is not found is listed as its bare name, and what the found files
    include need not be found)."""
    r = subprocess.run([cc] + fl + ["-M", "-MG", path],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr
    words = r.stdout.replace("\\\n", " ").split()
    return {os.path.realpath(w) for w in words if not w.endswith(":")}, ""


def check(entries_, hdrs, tmp, hdrs_root):
    """Returns the problems found."""
    jobs = []
    for folder, cc, fl, src in entries_:
        # What it may include: the allowed layers' headers, but the
        # internal ones of any layer not its own.
        def may(other, rel):
            return other in ALLOWED[folder] and (
                other == folder or "/internal/" not in rel)
        allowed = {name for other, hs in hdrs.items()
                   for name, rel in hs if may(other, rel)}
        jobs.append((folder, cc, fl, src, None))
        for other, hs in hdrs.items():
            for name, rel in hs:
                # A name an allowed layer has too is found there.
                if not may(other, rel) and name not in allowed:
                    jobs.append((folder, cc, fl, src, (other, rel)))

    def run(job):
        folder, cc, fl, src, probe = job
        if probe is None:
            rv, err = preprocess(cc, fl, src)
            if rv != 0:
                return ("%s: does not preprocess with its own flags: %s" %
                        (src, err.strip().splitlines()[:1]))
            return None
        other, rel = probe
        name = include_name(other, os.path.basename(rel))
        path = os.path.join(tmp, "probe_%d.c" % id(job))
        with open(path, "w") as f:
            f.write('#include "%s"\n' % name)
        got, err = found(cc, fl, path)
        os.unlink(path)
        if got is None:
            return ("%s: probe of %s failed: %s" %
                    (os.path.basename(src), name,
                     err.strip().splitlines()[:1]))
        if os.path.realpath(os.path.join(hdrs_root, rel)) in got:
            why = ("it is internal to " + other if other in ALLOWED[folder]
                   else "%s may only include %s" %
                   (folder, ", ".join(ALLOWED[folder])))
            return ("%s (%s): its target can include %s, but %s" %
                    (os.path.basename(src), folder, rel, why))
        return None

    with ThreadPoolExecutor(max_workers=2) as ex:
        results = list(ex.map(run, jobs))
    problems = [r for r in results if r]
    return problems, len(jobs)


def main():
    argv = sys.argv[1:]
    self_test = argv[:1] == ["--self-test"]
    if self_test:
        argv = argv[1:]
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 64
    repo, build = argv
    hdrs = headers(repo)
    es = entries(repo, build)
    if not es:
        print("check_layers_build: no layer's file in compile_commands.json")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        if self_test:
            core = [e for e in es if e[0] == "daemon/core"][:1]
            if not core:
                print("self-test: no core file compiled")
                return 1
            folder, cc, fl, src = core[0]
            shell = os.path.join(os.path.realpath(repo), "daemon/shell")
            bad, _ = check([(folder, cc, fl + ["-I", shell], src)], hdrs, tmp,
                           repo)
            good, _ = check(core, hdrs, tmp, repo)
            # A store file given the core's internal/ folder.
            store = [e for e in es if e[0] == "daemon/store"][:1]
            if not store:
                print("self-test: no store file compiled")
                return 1
            folder, cc, fl, src = store[0]
            internal = os.path.join(os.path.realpath(repo),
                                    "daemon/core/internal")
            bad2, _ = check([(folder, cc, fl + ["-I", internal], src)],
                            hdrs, tmp, repo)
            n_int = len([r for _, r in hdrs["daemon/core"]
                         if "/internal/" in r])
            ok = (bad and all("daemon/shell/" in b for b in bad) and
                  len(bad) == len(hdrs["daemon/shell"]) and not good and
                  n_int > 0 and len(bad2) == n_int and
                  all("internal to daemon/core" in b for b in bad2))
            bad += bad2
            print("self-test", "passed" if ok else "FAILED")
            if not ok:
                print("\n".join(bad + good))
            return 0 if ok else 1
        problems, n = check(es, hdrs, tmp, repo)
    for p in problems:
        print(p)
    print("check_layers_build: %d targets' flags, %d includes tried, "
          "%d problems" % (len(es), n, len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
