"""Progress (issue 16 part 6) is drawn with rich on stderr only when stderr is a terminal: under a
pseudo-terminal apply, restore, snapshot to a file, backup, doctor and import draw it and their
stdout stays exactly what a pipe gets; with stderr piped nothing but the result is written."""

from __future__ import annotations

import pytest

from tests.support.cli import run_cli, run_cli_on_terminal
from tests.support.progress import DECISIONS, PROGRESS_ENV as ENV


@pytest.fixture
def store(tmp_path):
    assert run_cli("--db", "a.db", "import", "jsonl-log", str(DECISIONS), cwd=tmp_path, env=ENV, text=False)[0] == 0
    (tmp_path / "events.ndjson").write_bytes(run_cli("--db", "a.db", "tail", cwd=tmp_path, env=ENV, text=False)[1])
    (tmp_path / "snap.ndjson").write_bytes(run_cli("--db", "a.db", "snapshot", cwd=tmp_path, env=ENV, text=False)[1])
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
    code, piped_out, piped_err = run_cli(*args, cwd=store, env=ENV, text=False)
    assert code == 0 and piped_err == b"" and b"\x1b" not in piped_out
    for leftover in ("b.db", "c.db", "copy.db", "d.db"):
        for suffix in ("", "-wal", "-shm"):
            (store / (leftover + suffix)).unlink(missing_ok=True)
    code, out, err = run_cli_on_terminal(args, cwd=store, env=ENV)
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
