#!/usr/bin/env python3
"""errtab_doc.py - the README's table of errors, printed from the one error
table (proto/errtab.h), so that the two cannot drift apart.

    python3 tests/tools/errtab_doc.py [REPO]            # print the block
    python3 tests/tools/errtab_doc.py --write [REPO]    # put it in README.md
    python3 tests/tools/errtab_doc.py --check [REPO]    # exit 1 if it differs

The block sits in README.md between the BEGIN and END lines below; --check
(a ctest, check_errtab_doc) fails when README.md's block is not what
errtab.h says, with a diff.
"""
import difflib
import os
import re
import sys

BEGIN = ("<!-- errtab: printed from proto/errtab.h by "
         "tests/tools/errtab_doc.py --write; do not edit by hand -->")
END = "<!-- errtab end -->"

# sysexits.h's values, which never change.
EXITS = {"EX_OK": 0, "EX_USAGE": 64, "EX_DATAERR": 65, "EX_NOINPUT": 66,
         "EX_NOUSER": 67, "EX_NOHOST": 68, "EX_UNAVAILABLE": 69,
         "EX_SOFTWARE": 70, "EX_OSERR": 71, "EX_OSFILE": 72,
         "EX_CANTCREAT": 73, "EX_IOERR": 74, "EX_TEMPFAIL": 75,
         "EX_PROTOCOL": 76, "EX_NOPERM": 77, "EX_CONFIG": 78}


def macro_body(text, name):
    """The text of #define name(X), continuation lines joined, comments
    dropped."""
    m = re.search(r"^#define\s+%s\(X\)[^\n]*\\\n" % name, text, re.M)
    if m is None:
        sys.exit("errtab_doc.py: no #define %s(X)" % name)
    lines = []
    for line in text[m.end():].split("\n"):
        cont = line.rstrip().endswith("\\")
        lines.append(line.rstrip().rstrip("\\"))
        if not cont:
            break
    body = "\n".join(lines)
    return re.sub(r"/\*.*?\*/", " ", body, flags=re.S)


def rows(body):
    """The X(...) rows of a macro body, each a list of its arguments (string
    literals side by side joined into one)."""
    out = []
    i = 0
    while True:
        i = body.find("X(", i)
        if i < 0:
            return out
        i += 2
        args, cur, depth = [], "", 0
        while True:
            c = body[i]
            if c == '"':
                j = i + 1
                while body[j] != '"':
                    j += 2 if body[j] == "\\" else 1
                cur += body[i:j + 1]
                i = j + 1
                continue
            if c == "(":
                depth += 1
            elif c == ")" and depth > 0:
                depth -= 1
            elif c in ",)" and depth == 0:
                args.append(cur.strip())
                cur = ""
                i += 1
                if c == ")":
                    break
                continue
            cur += c
            i += 1
        out.append([literal(a) if a.startswith('"') else a for a in args])


def literal(a):
    """Adjacent C string literals as one Python string."""
    return "".join(bytes(s, "utf-8").decode("unicode_escape")
                   for s in re.findall(r'"((?:[^"\\]|\\.)*)"', a))


def block(errtab):
    text = open(errtab, encoding="utf-8").read()
    main = rows(macro_body(text, "CUT_ERRTAB"))
    nng = rows(macro_body(text, "CUT_ERRTAB_NNG"))
    app = rows(macro_body(text, "CUT_ERRTAB_APP"))
    out = [BEGIN, "",
           "| internal code | gRPC status | libcut | cutctl exit | retry "
           "| HTTP | meaning |",
           "|---|---|---|---|---|---|---|"]
    for r in main:
        if len(r) != 7:
            sys.exit("errtab_doc.py: a row of %d columns: %r" % (len(r), r))
        err, status, cut, ex, retry, http, meaning = r
        if ex not in EXITS:
            sys.exit("errtab_doc.py: unknown exit status %s" % ex)
        out.append("| %s | %s | %s | %d `%s` | %s | %s | %s |" % (
            "—" if err == "E_NONE" else "`%s`" % err,
            "—" if status == "NONE" else "`%s`" % status,
            "0" if cut == "0" else "`%s`" % cut,
            EXITS[ex], ex, "yes" if retry == "1" else "no",
            "—" if status == "NONE" else (http if http != "0" else "500"),
            meaning.replace("|", "\\|")))
    out += ["",
            "nng's errors, as libcut reads them (any other: `CUT_EIO`): " +
            ", ".join("`%s` → `%s`" % (n, c) for n, c in nng) + ".",
            "",
            "The application link's `AppError` codes (any other: "
            "`CUT_EPROTO`): " +
            ", ".join("`%s` → `%s`" % (n, c) for n, c in app) + ".",
            "", END]
    return "\n".join(out) + "\n"


def main():
    args = sys.argv[1:]
    mode = args.pop(0) if args and args[0].startswith("--") else None
    root = args[0] if args else "."
    want = block(os.path.join(root, "proto", "errtab.h"))
    if mode is None:
        sys.stdout.write(want)
        return 0
    readme = os.path.join(root, "README.md")
    text = open(readme, encoding="utf-8").read()
    a, b = text.find(BEGIN), text.find(END)
    if a < 0 or b < a:
        print("errtab_doc.py: README.md has no errtab block")
        return 1
    have = text[a:b + len(END) + 1]
    if mode == "--write":
        with open(readme, "w", encoding="utf-8") as f:
            f.write(text[:a] + want + text[b + len(END) + 1:])
        return 0
    if mode == "--check":
        if have == want:
            print("errtab_doc: README.md's table of errors is errtab.h's")
            return 0
        sys.stdout.writelines(difflib.unified_diff(
            have.splitlines(True), want.splitlines(True),
            "README.md", "proto/errtab.h"))
        print("errtab_doc: README.md's table of errors differs from "
              "proto/errtab.h: run tests/tools/errtab_doc.py --write")
        return 1
    sys.exit("usage: errtab_doc.py [--write | --check] [REPO]")


if __name__ == "__main__":
    sys.exit(main())
