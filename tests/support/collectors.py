"""Collectors of `tail --follow` for the resume tests (issue 49 item 1): stores whose event stream
mixes local, applied and redacted events, collectors started as a shell would start them (stdout
appended to a file), killed with SIGKILL, and waits on what reached the collected file."""

from __future__ import annotations

import os
import signal
import subprocess

import fgraph
from tests.support.clock import stepping_clock
from tests.support.constants import CONFORMANCE_CLOCK
from tests.support.torture import FGRAPH, wait_for

YEAR_US = 365 * 86_400 * 1_000_000


def source_stream(path, count: int, *, start: int = CONFORMANCE_CLOCK - YEAR_US, prefix: str = "src") -> str:
    """The event/1 stream of a store written a year before the others: applied elsewhere, its events
    keep these older ``at`` instants, so ``at`` stops following the order of the stream."""
    with fgraph.connect(str(path), clock=stepping_clock(start)) as db:
        for i in range(count):
            db.transact({"id": f"{prefix}{i}", "src/n": i})
        return "".join(line + "\n" for line in db.iter_events())


def mixed_store(path, tmp) -> list[str]:
    """A store of local, applied (older ``at``) and one redacted event; returns its tail lines."""
    with fgraph.connect(str(path), clock=stepping_clock()) as db:
        db.transact({"id": "ada", "person/name": "Ada"})
        db.transact({"id": "secret", "person/name": "Zed"})
        db.apply(source_stream(tmp / "source-a.db", 3, prefix="a"))
        db.transact({"id": "bob", "person/name": "Bob"})
        db.excise("secret", operation_id="forget-zed", if_basis_tx=db.latest_tx())
        db.apply(source_stream(tmp / "source-b.db", 2, prefix="b", start=CONFORMANCE_CLOCK + YEAR_US))
        db.transact({"id": "cy", "person/name": "Cy"})
        return list(db.iter_events())


def lines_of(path) -> list[bytes]:
    try:
        with open(path, "rb") as handle:
            return handle.read().splitlines(keepends=True)
    except FileNotFoundError:
        return []


def start(args, out_path, *, cwd=None, env=None, executable=FGRAPH) -> subprocess.Popen:
    """``fgraph ARGS >> OUT`` in its own process group, stderr kept in OUT.err."""
    out = open(out_path, "ab")
    err = open(f"{out_path}.err", "ab")
    try:
        return subprocess.Popen([executable, *map(str, args)], stdout=out, stderr=err, cwd=cwd, env=env,
                                start_new_session=True)
    finally:
        out.close()
        err.close()


def tail_appending(db, args, out_path) -> tuple[int, bytes]:
    """``fgraph --db DB tail ARGS >> OUT`` run to its end: (exit code, stderr)."""
    with open(out_path, "ab") as out:
        proc = subprocess.run([FGRAPH, "--db", str(db), "tail", *map(str, args)], stdout=out, stderr=subprocess.PIPE,
                              timeout=60)
    return proc.returncode, proc.stderr


def kill9(proc: subprocess.Popen) -> None:
    """SIGKILL the process group (a shell loop and its tail alike) and reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=30)


def wait_until_lines(path, count: int, timeout: float = 60.0) -> bool:
    return wait_for(lambda: len(lines_of(path)) >= count, timeout=timeout)


def expected(db_path) -> bytes:
    """What `tail --since 64` prints of the store now."""
    proc = subprocess.run([FGRAPH, "--db", str(db_path), "tail", "--since", "64"], capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout

