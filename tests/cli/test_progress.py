"""Progress (issue 16 part 6) is drawn with rich on stderr only when stderr is a terminal: under a
pseudo-terminal apply, restore, snapshot to a file, backup, doctor and import draw it and their
stdout stays exactly what a pipe gets; with stderr piped nothing but the result is written."""

from __future__ import annotations
from tests.support.paths import FIXTURES

import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest

FGRAPH = str(Path(sys.executable).with_name("fgraph"))
DECISIONS = FIXTURES / "import" / "decisions.clean.jsonl"
ENV = {"FGRAPH_CLOCK": "1767225600000000", "FGRAPH_EVENT_SEED": "progress-tests", "TERM": "xterm",
       "COLUMNS": "100"}


def run(args, *, terminal: bool, cwd: Path, fgraph: str = FGRAPH, env: dict = ENV) -> tuple[int, bytes, bytes]:
    """Run the CLI with stdout piped and stderr either a pseudo-terminal or a pipe."""
    if not terminal:
        proc = subprocess.run([fgraph, *args], capture_output=True, env=env, cwd=cwd, timeout=120)
        return proc.returncode, proc.stdout, proc.stderr
    master, slave = pty.openpty()
    proc = subprocess.Popen([fgraph, *args], stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL,
                            env=env, cwd=cwd)
    os.close(slave)
    out = proc.stdout.read()
    proc.stdout.close()
    err = b""
    while select.select([master], [], [], 1.0)[0]:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        err += chunk
    os.close(master)
    return proc.wait(timeout=60), out, err


@pytest.fixture
def store(tmp_path):
    assert run(["--db", "a.db", "import", "jsonl-log", str(DECISIONS)], terminal=False, cwd=tmp_path)[0] == 0
    (tmp_path / "events.ndjson").write_bytes(run(["--db", "a.db", "tail"], terminal=False, cwd=tmp_path)[1])
    (tmp_path / "snap.ndjson").write_bytes(run(["--db", "a.db", "snapshot"], terminal=False, cwd=tmp_path)[1])
    return tmp_path


@pytest.mark.parametrize("args, label", [
    (["--db", "b.db", "apply", "events.ndjson"], b"applying"),
    (["--db", "c.db", "restore", "snap.ndjson"], b"restoring"),
    (["--db", "a.db", "snapshot"], b"snapshot"),
    (["--db", "a.db", "backup", "copy.db"], b"backing up"),
    (["--db", "a.db", "doctor"], b"checking"),
    (["--db", "d.db", "import", "jsonl-log", str(DECISIONS)], b"importing"),
])
def test_progress_only_on_a_terminal_and_never_in_the_output(store, args, label):
    code, piped_out, piped_err = run(args, terminal=False, cwd=store)
    assert code == 0 and piped_err == b"" and b"\x1b" not in piped_out
    for leftover in ("b.db", "c.db", "copy.db", "d.db"):
        for suffix in ("", "-wal", "-shm"):
            (store / (leftover + suffix)).unlink(missing_ok=True)
    code, out, err = run(args, terminal=True, cwd=store)
    assert code == 0 and label in err and b"\x1b[" in err
    assert b"\x1b" not in out
    if args[2] in ("snapshot",):
        assert out == piped_out  # the same bytes whether or not progress was drawn beside them
    else:
        assert out.split(b"\n")[0] == piped_out.split(b"\n")[0]


def test_counts_are_shown_in_their_units():
    from fgraph.cli.progress import measure
    assert measure({"unit": "bytes", "size": 11_739_311, "items_unit": "events", "items": 1234}, 4_200_000) \
        == "4.2 MB of 11.7 MB · 1,234 events"
    assert measure({"unit": "bytes", "size": None, "items_unit": "records", "items": 5}, 22_051) \
        == "22.1 kB · 5 records"
    assert measure({"unit": "records", "size": 2000}, 300) == "300/2,000 records"
    assert measure({"unit": "lines", "size": None}, 12345) == "12,345 lines"
    assert measure({"unit": "", "size": None, "size_bytes": 163_840}, 0) == "163.8 kB"
    assert measure({"unit": ""}, 0) == ""
