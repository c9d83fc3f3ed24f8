#!/usr/bin/env python3
"""cutman.py - one manual page per public function of libcut, from cut.h.

    cutman.py [--date DATE] HEADER OUTDIR

Reads every CUT_API declaration of HEADER and the comment just before it
(declarations that follow one another with no comment of their own share
the comment of the first, and are listed on each other's pages), and
writes OUTDIR/NAME.3 in mdoc(7) for each, with NAME, LIBRARY, SYNOPSIS
(with the typedefs the declaration uses), DESCRIPTION (the comment, the
typedefs' comments, and under NOTES the section comment the declaration
sits in), RETURN VALUES (the comment from its first "Returns"), and SEE
ALSO libcut(3), the group and every function the text names.  Pages in
OUTDIR that no declaration gives any more are removed.  There is no list
of functions: a declaration added to the header gets its page at the next
build.  Python 3, standard library only.
"""

import os
import re
import sys
import time

COMMENT = re.compile(r"/\*(.*?)\*/", re.S)
# Where a sentence ends: a period (not that of "e.g." or "i.e.") or a
# semicolon, then blanks.
SENTENCE = re.compile(r"(?<!e\.g)(?<!i\.e)(?<=[.;])\s+(?=\S)")
IDENT = re.compile(r"\b(cut_[a-z0-9_]+)\b")


def comment_text(raw):
    """The text of a /* */ comment, as paragraphs (lists of lines)."""
    lines = []
    for line in raw.split("\n"):
        line = line.strip()
        if line.startswith("*"):
            line = line[1:].strip()
        lines.append(line)
    paras, cur = [], []
    for line in lines:
        if line:
            cur.append(line)
        elif cur:
            paras.append(" ".join(cur))
            cur = []
    if cur:
        paras.append(" ".join(cur))
    return paras


def parse(text):
    """The header as a list of items: ("comment", paras, followed_by_blank),
    ("decl", name, text), ("typedef", name, text), ("blank",)."""
    items = []
    pos = 0
    n = len(text)
    while pos < n:
        if text.startswith("/*", pos):
            end = text.index("*/", pos) + 2
            items.append(["comment", comment_text(text[pos + 2:end - 2])])
            # The end of the comment's line is not a blank line.
            eol = text.find("\n", end)
            if eol >= 0 and text[end:eol].strip() == "":
                end = eol + 1
            pos = end
            continue
        eol = text.find("\n", pos)
        if eol < 0:
            eol = n
        line = text[pos:eol]
        stripped = line.strip()
        if stripped == "":
            items.append(["blank"])
            pos = eol + 1
            continue
        if stripped.startswith("CUT_API") or stripped.startswith("typedef"):
            end = text.index(";", pos) + 1
            decl = text[pos:end]
            # A trailing comment on the same line belongs to nothing.
            decl = " ".join(COMMENT.sub(" ", decl).split())
            if decl.startswith("CUT_API"):
                decl = decl[len("CUT_API"):].strip()
                m = re.search(r"\b(cut_[a-z0-9_]+)\s*\(", decl)
                if m:
                    items.append(["decl", m.group(1), decl])
            else:
                m = re.search(r"\(\s*\*\s*(cut_[a-z0-9_]+)\s*\)", decl)
                if m:
                    items.append(["typedef", m.group(1), decl])
            eol = text.find("\n", end)
            if eol >= 0 and text[end:eol].strip() == "":
                end = eol + 1
            pos = end
            continue
        # Any other code: preprocessor lines, structs, enums.
        if stripped.startswith("#"):
            while line.rstrip().endswith("\\") and eol < n:
                nxt = text.find("\n", eol + 1)
                eol = n if nxt < 0 else nxt
                line = text[pos:eol]
        items.append(["code"])
        pos = eol + 1
    return items


def collect(items):
    """Functions (name -> dict) and typedefs (name -> dict)."""
    funcs, typedefs, order = {}, {}, []
    section = None
    pending = None  # the comment right above, if nothing came between
    group = None
    for i, it in enumerate(items):
        kind = it[0]
        if kind == "comment":
            nxt = items[i + 1][0] if i + 1 < len(items) else "blank"
            if nxt == "blank" and (i == 0 or items[i - 1][0] == "blank"):
                # A comment standing alone: a section, unless it is the
                # file's opening block.
                section = it[1] if i > 0 else None
                pending = None
            elif nxt in ("decl", "typedef"):
                pending = it[1]
            else:
                pending = None
            group = None
            continue
        if kind == "decl":
            name, decl = it[1], it[2]
            if pending is not None:
                group = {"paras": pending, "names": []}
            elif group is None:
                group = {"paras": [], "names": []}
            group["names"].append(name)
            funcs[name] = {"decl": decl, "group": group, "section": section}
            order.append(name)
            pending = None
            continue
        if kind == "typedef":
            typedefs[it[1]] = {"decl": it[2], "paras": pending or []}
            pending = None
            group = None
            continue
        if kind == "blank":
            group = None
            continue
        pending = None
        group = None
    return funcs, typedefs, order


def esc(s):
    """Text for an mdoc line: backslashes escaped, function names bold."""
    s = s.replace("\\", "\\e")
    s = re.sub(r"\b(cut_[a-z0-9_]+)\(\)", r"\\fB\1\\fP()", s)
    return s


def text_lines(para):
    """A paragraph as mdoc lines: one sentence per line, as mdoc wants,
    none starting with a dot or an apostrophe."""
    out = []
    para = " ".join(para.split())
    for sent in SENTENCE.split(para):
        line = esc(sent)
        if line[:1] in (".", "'"):
            line = "\\&" + line
        out.append(line)
    return out


def split_params(decl):
    """The return type, name and parameters of a function declaration."""
    m = re.match(r"(.*?)\b(cut_[a-z0-9_]+)\s*\((.*)\)\s*;$", decl)
    ret, name, params = m.group(1).strip(), m.group(2), m.group(3)
    parts, depth, cur = [], 0, ""
    for ch in params:
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
            continue
        depth += ch == "("
        depth -= ch == ")"
        cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return ret, name, parts


def split_returns(paras):
    """DESCRIPTION and RETURN VALUES: the text from the first sentence
    that starts with "Returns" (or "Return") on is the latter."""
    for i, p in enumerate(paras):
        m = re.search(r"(?:^|(?<=[.;)]\s))\s*(Returns?\b)", p)
        if m:
            start = m.start(1)
            desc = paras[:i] + ([p[:start].strip()] if p[:start].strip() else [])
            return desc, [p[start:]] + paras[i + 1:]
    return paras, []


def name_line(paras):
    """The one-line description: the first sentence of the comment, up
    to a semicolon."""
    if not paras:
        return "a function of libcut"
    first = re.split(r"(?<!e\.g)(?<!i\.e)(?<=\.)\s+", paras[0])[0]
    first = first.rstrip(".").split(";")[0]
    if first[:1].isupper() and not first.startswith("CUT_"):
        first = first[0].lower() + first[1:]
    return first


def page(name, f, funcs, typedefs, version, date):
    group = f["group"]
    paras = group["paras"]
    desc, rets = split_returns(paras)
    ret, _, params = split_params(f["decl"])
    used = [t for t in typedefs if re.search(r"\b%s\b" % t, f["decl"])]
    out = [
        '.\\" Generated by deploy/man/cutman.py from cut/cut.h; do not edit.',
        ".Dd %s" % date,
        ".Dt %s 3" % name.upper(),
        ".Os libcut %s" % version,
        ".Sh NAME",
    ]
    names = group["names"]
    for i, n in enumerate(names):
        out.append(".Nm %s%s" % (n, " ," if i + 1 < len(names) else ""))
    out.append(".Nd " + esc(name_line(paras)))
    out += [".Sh LIBRARY", "libcut", ".Pq Fl lcut", ".Sh SYNOPSIS", ".In cut/cut.h"]
    for t in used:
        out.append(".Vt " + esc(typedefs[t]["decl"]))
    for n in names:
        r, _, ps = split_params(funcs[n]["decl"])
        out.append('.Ft "%s"' % esc(r))
        out.append(".Fn %s %s" % (n, " ".join('"%s"' % esc(p) for p in ps)))
    out.append(".Sh DESCRIPTION")
    first = True
    for p in desc or ["See RETURN VALUES."]:
        if not first:
            out.append(".Pp")
        out += text_lines(p)
        first = False
    for t in used:
        for p in typedefs[t]["paras"]:
            out.append(".Pp")
            out += text_lines(p)
    # A section comment that is only a title ("Messages.") says nothing
    # a page needs.
    if f["section"] and (len(f["section"]) > 1 or
                         len(SENTENCE.split(f["section"][0])) > 1):
        out.append(".Sh NOTES")
        first = True
        for p in f["section"]:
            if not first:
                out.append(".Pp")
            out += text_lines(p)
            first = False
    out.append(".Sh RETURN VALUES")
    if rets:
        first = True
        for p in rets:
            if not first:
                out.append(".Pp")
            out += text_lines(p)
            first = False
    elif ret == "void":
        out.append("None.")
    else:
        out.append("The value described above.")
    # SEE ALSO: libcut(3), the rest of the group, the functions named.
    seen = set([name])
    refs = []
    text = " ".join(paras + [p for t in used for p in typedefs[t]["paras"]]
                    + (f["section"] or []))
    for n in names + IDENT.findall(text):
        if n in funcs and n not in seen:
            seen.add(n)
            refs.append(n)
    out.append(".Sh SEE ALSO")
    xrefs = [("libcut", 3)] + sorted((n, 3) for n in refs) + [("cutd", 8)]
    for i, (n, s) in enumerate(xrefs):
        out.append(".Xr %s %d%s" % (n, s, " ," if i + 1 < len(xrefs) else ""))
    return "\n".join(out) + "\n"


def main(argv):
    date = None
    if len(argv) > 2 and argv[1] == "--date":
        date = argv[2]
        argv = argv[:1] + argv[3:]
    if len(argv) != 3:
        sys.exit("usage: cutman.py [--date DATE] HEADER OUTDIR")
    header, outdir = argv[1], argv[2]
    with open(header, encoding="utf-8") as fh:
        text = fh.read()
    m = re.search(r'#define\s+CUT_VERSION\s+"([^"]+)"', text)
    version = m.group(1) if m else "?"
    if date is None:
        # Reproducible: SOURCE_DATE_EPOCH, else when the header changed.
        t = os.environ.get("SOURCE_DATE_EPOCH")
        t = int(t) if t else int(os.stat(header).st_mtime)
        date = time.strftime("%B %-d, %Y", time.gmtime(t))
    funcs, typedefs, order = collect(parse(text))
    if not order:
        sys.exit("cutman.py: %s: no CUT_API declaration" % header)
    os.makedirs(outdir, exist_ok=True)
    written = set()
    for name in order:
        path = os.path.join(outdir, name + ".3")
        body = page(name, funcs[name], funcs, typedefs, version, date)
        old = None
        if os.path.exists(path):
            with open(path, encoding="utf-8") as fh:
                old = fh.read()
        if old != body:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(body)
        written.add(name + ".3")
    for f in os.listdir(outdir):
        if f.endswith(".3") and f not in written:
            os.remove(os.path.join(outdir, f))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
