#!/usr/bin/env python3
"""connflood.py PATH COUNT [--parallel N]: COUNT clients connect to the
AF_UNIX socket at PATH (an nng ipc:// listener) and go away before the SP
handshake ends: even-numbered ones close right after connect(), odd ones
after the first 3 bytes of the 8-byte SP header.  Up to N (default 50) at
a time.  Prints how many connected and how many were refused (or timed
out: a connect() to a listener whose backlog is full waits, and one
that stopped accepting never frees it; nng's own clients connect without
blocking and are not held so)."""
import socket
import sys


def main():
    args = sys.argv[1:]
    parallel = 50
    if "--parallel" in args:
        k = args.index("--parallel")
        parallel = int(args[k + 1])
        del args[k : k + 2]
    if len(args) != 2:
        sys.stderr.write(__doc__)
        return 64
    path, count = args[0], int(args[1])
    connected = refused = 0
    n = 0
    while n < count:
        batch = []
        for _ in range(min(parallel, count - n)):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(2)
            try:
                s.connect(path)
            except OSError:
                refused += 1
                s.close()
                n += 1
                continue
            connected += 1
            if n % 2 == 1:
                try:
                    s.send(b"\x00SP")
                except OSError:
                    pass
            batch.append(s)
            n += 1
        for s in batch:
            s.close()
    print("connected=%d refused=%d" % (connected, refused))
    return 0


if __name__ == "__main__":
    sys.exit(main())
