"""Proves the bridge of the reviewed-stream commands (issue 35): files and stdin reach the streams
wing, a review never creates its receiver, and a digest-free apply reads the handle untouched."""

from __future__ import annotations

import io

import blake3
import pytest

import fgraph
from fgraph.bridges import reviewing
from fgraph.core.errors import Conflict, FormatError, NotFound


class Stdin:
    """A stand-in for sys.stdin: text on top, bytes in ``buffer``."""

    def __init__(self, data: bytes):
        self.buffer = io.BytesIO(data)


def test_digest_of_a_file_and_of_stdin(tmp_path):
    (tmp_path / "s.ndjson").write_bytes(b"abc\n")
    expected = "blake3:" + blake3.blake3(b"abc\n").hexdigest()
    assert reviewing.digest_stream(str(tmp_path / "s.ndjson"), Stdin(b""))["digest"] == expected
    assert reviewing.digest_stream("-", Stdin(b"abc\n")) == {"digest": expected, "stream": "stdin"}
    with pytest.raises(FormatError, match="cannot be read"):
        reviewing.digest_stream(str(tmp_path / "missing"), Stdin(b""))


def test_expecting_wraps_only_when_a_digest_is_given():
    handle = io.BytesIO(b"x\n")
    assert reviewing.expecting(handle, None) is handle
    reader = reviewing.expecting(io.BytesIO(b"x\n"), "blake3:" + "0" * 64)
    with pytest.raises(Conflict):
        while reader.readline():
            pass


def test_a_review_needs_a_receiver_that_exists(tmp_path):
    with pytest.raises(NotFound, match="fgraph init"):
        reviewing.require_receiver(str(tmp_path / "new.db"))
    assert not (tmp_path / "new.db").exists()
    reviewing.require_receiver(":memory:")


def test_review_render_and_verify_through_the_bridge(tmp_path):
    db = fgraph.connect(str(tmp_path / "a.db"))
    try:
        db.transact({"id": "ada", "n/v": 1})
        data = "".join(line + "\n" for line in db.iter_events(64)).encode()
        result = reviewing.review_stream(db, "-", Stdin(data))
    finally:
        db.close()
    assert result["stream"] == "stdin" and result["counts"]["already_applied"] == 1
    assert reviewing.review_markdown(result).startswith("# Review of stdin")
    out = io.BytesIO()
    reviewing.render_stream("-", Stdin(data), out)
    assert out.getvalue().startswith(b"event ") and b"  assert ada n/v = 1\n" in out.getvalue()
    with reviewing.chain_writer(str(tmp_path / "s.chain")) as chain:
        chain.add(data)
    assert reviewing.verify_chained("-", str(tmp_path / "s.chain"), Stdin(data))["intact"]
