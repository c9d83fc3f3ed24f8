#!/usr/bin/env python3
"""promtext.py - reads Prometheus text format (0.0.4), for the tests.

    promtext.py check FILE          checks the format: every sample's
                                    family has # HELP and # TYPE before it,
                                    counters end in _total, names and
                                    labels are well formed, histograms are
                                    cumulative with +Inf equal to _count
    promtext.py get FILE NAME [LABEL=VALUE...]
                                    prints the value of the one sample
                                    NAME with those labels (others may
                                    differ); exits 1 if none or several

Exits 0 when all is well, 1 with the reason on stderr otherwise.
"""
import re
import sys

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(?:,|$)')


def parse(text):
    """Returns (families {name: (type, help)}, samples [(name, labels,
    value, family)]), raising ValueError on a malformed line."""
    fams, helps, samples = {}, {}, []
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("# HELP "):
            name, _, h = line[7:].partition(" ")
            helps[name] = h
            continue
        if line.startswith("# TYPE "):
            name, _, t = line[7:].partition(" ")
            if name not in helps:
                raise ValueError(f"line {n}: TYPE of {name} before HELP")
            if t not in ("counter", "gauge", "histogram", "summary",
                         "untyped"):
                raise ValueError(f"line {n}: bad type {t}")
            fams[name] = (t, helps[name])
            continue
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        if not m:
            raise ValueError(f"line {n}: not a sample: {line!r}")
        name, body, value = m.groups()
        labels = {}
        pos = 0
        body = body or ""
        while pos < len(body):
            lm = LABEL.match(body, pos)
            if not lm:
                raise ValueError(f"line {n}: bad labels {body!r}")
            labels[lm.group(1)] = lm.group(2)
            pos = lm.end()
        fam = name
        if fam not in fams:
            for suffix in ("_bucket", "_sum", "_count"):
                if name.endswith(suffix) and name[:-len(suffix)] in fams:
                    fam = name[:-len(suffix)]
        if fam not in fams:
            raise ValueError(f"line {n}: {name} has no # TYPE before it")
        samples.append((name, labels, float(value), fam))
    return fams, samples


def check(text):
    fams, samples = parse(text)
    for name, (t, _) in fams.items():
        if not name.startswith("cutd_"):
            raise ValueError(f"{name}: no cutd_ prefix")
        if t == "counter" and not name.endswith("_total"):
            raise ValueError(f"counter {name} does not end in _total")
        if t != "counter" and name.endswith("_total"):
            raise ValueError(f"{t} {name} ends in _total")
    hists = {}
    for name, labels, value, fam in samples:
        if fams[fam][0] != "histogram":
            continue
        key = (fam, tuple(sorted((k, v) for k, v in labels.items()
                                 if k != "le")))
        h = hists.setdefault(key, {"buckets": [], "count": None})
        if name.endswith("_bucket"):
            h["buckets"].append((labels["le"], value))
        elif name.endswith("_count"):
            h["count"] = value
    for key, h in hists.items():
        values = [v for _, v in h["buckets"]]
        if values != sorted(values):
            raise ValueError(f"{key}: buckets not cumulative")
        if not h["buckets"] or h["buckets"][-1][0] != "+Inf":
            raise ValueError(f"{key}: no +Inf bucket last")
        if h["buckets"][-1][1] != h["count"]:
            raise ValueError(f"{key}: +Inf bucket != _count")
    return len(samples)


def get(text, name, want):
    _, samples = parse(text)
    found = [v for n, labels, v, _ in samples
             if n == name and all(labels.get(k) == x for k, x in want)]
    if len(found) != 1:
        raise ValueError(f"{len(found)} samples {name} {want}")
    v = found[0]
    print(int(v) if v == int(v) else v)


def main():
    try:
        with open(sys.argv[2]) as f:
            text = f.read()
        if sys.argv[1] == "check":
            check(text)
        elif sys.argv[1] == "get":
            want = [a.split("=", 1) for a in sys.argv[4:]]
            get(text, sys.argv[3], want)
        else:
            raise ValueError("usage: promtext.py check|get FILE ...")
    except (ValueError, IndexError, OSError) as e:
        print(f"promtext.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
