"""The library behind the reviewed-stream commands (issue 35, docs/streams.md §Reviewing a
stream): ``review``, ``render``, ``review --digest``, ``apply --expect-digest``, ``tail --chain``
and ``verify-stream``. Each opens its file (or stdin for ``-``) and hands it to the streams wing.
"""

from __future__ import annotations

import contextlib
import os
from typing import IO

from fgraph.bridges.add.ingest import open_stream
from fgraph.core.errors import NotFound


def _name(src: str) -> str:
    return "stdin" if src == "-" else src


def require_receiver(path: str) -> None:
    """A review reads a receiver that exists: reviewing against a new file would create it."""
    if path != ":memory:" and not os.path.exists(path):
        raise NotFound(f"the receiver database {path!r} does not exist",
                       "pass the store you would apply to with --db (or --against); `fgraph init` creates an "
                       "empty one")


def review_stream(db, src: str, stdin: IO) -> dict:
    """What applying SRC to ``db`` would do, by a dry run (nothing is written)."""
    from fgraph.streams.review import review
    if _proposals(src):   # a proposals file of `mcp --propose` (docs/proposals.md P5)
        from fgraph.bridges.proposals import show
        return show.review(db, src)
    with open_stream(src, stdin) as handle:
        return review(db, handle, _name(src))


def _proposals(src: str) -> bool:
    if src == "-":
        return False
    from fgraph.bridges.proposals.show import is_proposals_file
    return is_proposals_file(src)


def review_markdown(result: dict) -> str:
    if "proposals_file" in result:
        from fgraph.bridges.proposals import show
        return show.markdown(result)
    from fgraph.streams.render import markdown
    return markdown(result)


def digest_stream(src: str, stdin: IO) -> dict:
    """``blake3:<hex>`` of the exact bytes of SRC."""
    from fgraph.streams.digest import digest_of
    if _proposals(src):   # the digest `proposals accept --all` needs: of the pending proposals' events
        from fgraph.bridges.proposals import decide, pending
        return {"digest": decide.stream_digest(pending.ProposalFile(src).records()), "stream": _name(src)}
    with open_stream(src, stdin) as handle:
        return {"digest": digest_of(handle), "stream": _name(src)}


def expecting(handle, digest: str | None):
    """``handle`` itself, or (with a digest) a reader that refuses other bytes at the end of the stream."""
    if digest is None:
        return handle
    from fgraph.streams.digest import DigestReader
    return DigestReader(handle, digest)


def render_stream(src: str, stdin: IO, out) -> None:
    """Write the rendered text of SRC on the binary stream ``out``."""
    from fgraph.bridges.proposals.show import render_lines as render_proposals
    from fgraph.streams.render import render_lines
    with open_stream(src, stdin) as handle:
        for line in render_proposals(handle) or render_lines(handle):
            out.write(line.encode("utf-8") + b"\n")
    out.flush()


def chain_writer(path: str):
    """The hash chain ``tail --chain`` keeps at ``path`` (continued when it exists)."""
    from fgraph.streams.chain import ChainWriter
    return ChainWriter(path)


@contextlib.contextmanager
def chained_output(path: str | None, out):
    """``out`` itself without a chain; else ``out`` with each write (one line) linked into the chain at
    ``path``, its links fsynced on each flush, after the lines themselves."""
    if path is None:
        yield out
        return
    from fgraph.streams.chain import ChainedOutput
    with chain_writer(path) as chain:
        yield ChainedOutput(out, chain)


def verify_chained(src: str, chain: str, stdin: IO) -> dict:
    """Whether SRC is exactly the lines the chain file covers, and where not."""
    from fgraph.streams.chain import verify
    with open_stream(src, stdin) as handle:
        return {"stream": _name(src), **verify(handle, chain)}


def apply_refusal(summary: dict | None = None, error=None):
    """``apply --dry-run`` exits as ``apply`` would (issue 49 item 3): the error a real apply of the
    stream would raise, from the dry run's summary or the error it stopped on; None when it commits."""
    from fgraph.streams.apply import refusal
    return refusal(summary, error)
