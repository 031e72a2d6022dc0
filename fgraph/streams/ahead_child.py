"""The child of ``fgraph.streams.ahead``: it checks the lines a parent sends and answers one flag
per line (a module of its own: it imports apply, which imports ``ahead``)."""

from __future__ import annotations

import os
import struct
import sys

from fgraph.core.canonical import dumps_bytes
from fgraph.streams import apply, ahead


def check_apply(raw: bytes) -> int:
    """1 when ``raw`` is a line apply accepts whose record's canonical bytes are ``raw`` itself."""
    try:
        return 1 if dumps_bytes(apply.parse_line(0, raw)) == raw else 0
    except Exception:  # noqa: BLE001 - any refusal is for the parent to make, at its line
        return 0


CHECKS = {"apply": check_apply}


def main(kind: str, package: str) -> None:
    """For each batch on stdin (count, lengths, lines), one flag per line on stdout (0 for an empty
    line: one not sent). A child that is not the parent's own code (``package``: the parent's
    ``fgraph/streams``) answers nothing, and the parent does the work."""
    if os.path.dirname(os.path.abspath(ahead.__file__)) != package:
        return
    check = CHECKS[kind]
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    try:
        while True:
            head = inp.read(4)
            if len(head) < 4:
                return
            (count,) = struct.unpack("<I", head)
            lengths = inp.read(4 * count)
            if len(lengths) < 4 * count:
                return
            sizes = struct.unpack(f"<{count}I", lengths)
            data = inp.read(sum(sizes))
            flags = bytearray(count)
            at = 0
            for i, size in enumerate(sizes):
                flags[i] = check(data[at:at + size]) if size else 0
                at += size
            out.write(flags)
            out.flush()
    except (OSError, KeyboardInterrupt):
        return
