"""core/hashing: the digests are hashlib's, and importing the module (or reading a store) does not
load hashlib."""

from __future__ import annotations

import hashlib
import subprocess
import sys

from fgraph.core import hashing


def test_the_digests_are_hashlibs():
    for data in (b"", b"fgraph", bytes(range(256)) * 9):
        assert hashing.sha256(data).digest() == hashlib.sha256(data).digest()
        assert hashing.sha1(data).digest() == hashlib.sha1(data).digest()
    h = hashing.sha256(b"a")
    h.update(b"b")
    assert h.hexdigest() == hashlib.sha256(b"ab").hexdigest()


def test_reading_a_store_does_not_load_hashlib(tmp_path):
    path = tmp_path / "s.db"
    probe = ("import sys, fgraph\n"
             "fgraph.connect(sys.argv[1]).close()\n"  # genesis writes: hashlib is expected here
             "print('hashlib' in sys.modules)\n")
    assert subprocess.run([sys.executable, "-c", probe, str(path)], capture_output=True, text=True,
                          check=True).stdout.split() == ["True"]
    probe = ("import sys, fgraph\n"
             "with fgraph.connect(sys.argv[1], read_only=True) as db:\n"
             "    db.info(); db.entity(db.latest_tx())\n"
             "print('hashlib' in sys.modules)\n")
    assert subprocess.run([sys.executable, "-c", probe, str(path)], capture_output=True, text=True,
                          check=True).stdout.split() == ["False"]
