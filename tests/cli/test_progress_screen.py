"""What a person sees (issue 31 item 2): each long command runs with stdout and stderr on one
pseudo-terminal, as in a shell, and ``pyte`` plays the bytes back as a terminal would. While it
works the display names its phase and counts in units (events, records, lines, kB); a phase of
unknown length has no bar; at the end no frame is left and the result starts at column 0 on a
line of its own, exactly the result a pipe gets."""

from __future__ import annotations

import fcntl
import json
import os
import re
import pty
import select
import struct
import subprocess
import termios
from pathlib import Path

import pytest

from tests.support.cli import FGRAPH, run_cli
from tests.support.progress import DECISIONS, PROGRESS_ENV as ENV

pyte = pytest.importorskip("pyte")  # the `test` extra (pyproject.toml) installs it

COLUMNS, ROWS = 120, 40
BAR = "━"
SPINNER = set("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")
RECORDS = 300


class Screen:
    """The bytes a command wrote to its terminal, played back: ``seen`` is every non-blank row of
    every intermediate screen, ``rows`` the final screen's rows and ``cursor`` its (x, y)."""

    def __init__(self, data: bytes):
        screen = pyte.Screen(COLUMNS, ROWS)
        stream = pyte.ByteStream(screen)
        self.seen: list[str] = []
        for piece in data.split(b"\r"):  # rich redraws each frame from column 0
            stream.feed(piece + b"\r")
            self.seen.extend(row.rstrip() for row in screen.display if row.strip())
        self.rows = [row.rstrip() for row in screen.display]
        self.cursor = (screen.cursor.x, screen.cursor.y)

    def text(self) -> str:
        """The final screen as text, rows the terminal wrapped joined again."""
        out, rows = "", [row for row in self.rows]
        while rows and not rows[-1]:
            rows.pop()
        for row in rows:
            out += row + ("" if len(row) == COLUMNS else "\n")
        return out


def on_terminal(args, cwd: Path, stdout=None) -> tuple[int, Screen]:
    """Run the CLI on a pseudo-terminal of COLUMNS x ROWS (stdout there too unless redirected)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
    env = dict(ENV, COLUMNS=str(COLUMNS), LINES=str(ROWS))
    proc = subprocess.Popen([FGRAPH, *args], stdin=subprocess.DEVNULL, stdout=stdout or slave, stderr=slave,
                            env=env, cwd=cwd)
    os.close(slave)
    data = b""
    while True:
        if select.select([master], [], [], 0.5)[0]:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the child closed its end
                break
            if not chunk:
                break
            data += chunk
        elif proc.poll() is not None:
            break
    os.close(master)
    return proc.wait(timeout=120), Screen(data)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    where = tmp_path_factory.mktemp("screen")
    assert run_cli("--db", "a.db", "import", "jsonl-log", str(DECISIONS), cwd=where, env=ENV, text=False)[0] == 0
    (where / "events.ndjson").write_bytes(run_cli("--db", "a.db", "tail", cwd=where, env=ENV, text=False)[1])
    (where / "snap.ndjson").write_bytes(run_cli("--db", "a.db", "snapshot", cwd=where, env=ENV, text=False)[1])
    assert run_cli("--db", "a.db", "backup", "saved.db", cwd=where, env=ENV, text=False)[0] == 0
    (where / "decisions.jsonl").write_bytes(DECISIONS.read_bytes())
    (where / "many.ndjson").write_text("".join(f'{{"id":"n{i}","note/n":{i}}}\n' for i in range(RECORDS)))
    return where


def _fresh(where: Path, *names: str) -> None:
    for name in names:
        for suffix in ("", "-wal", "-shm"):
            (where / (name + suffix)).unlink(missing_ok=True)


# (arguments, files each run creates, patterns that must have been on screen while it worked)
COMMANDS = {
    "apply": (["--db", "b.db", "apply", "events.ndjson"], ["b.db"],
              [r"applying .* of 22\.\d kB · \d+ events", r"applying: committing +22\.\d kB · 6 events"]),
    "restore": (["--db", "c.db", "restore", "snap.ndjson"], ["c.db"],
                [r"restoring .* of \d+\.\d kB · \d+ records", r"restoring: verifying +\d+\.\d kB · \d+ records"]),
    "backup": (["--db", "a.db", "backup", "copy.db"], ["copy.db"],
               [r"backing up to copy\.db: copying +\d+\.\d kB", r"backing up to copy\.db: verifying +\d+\.\d kB",
                "backing up to copy.db: digest", "backing up to copy.db: syncing"]),
    "restore-backup": (["--db", "a.db", "restore-backup", "saved.db", "back.db"], ["back.db"],
                       [r"restoring saved\.db: copying +\d+\.\d kB", "restoring saved.db: verifying",
                        "restoring saved.db: digest", "digest of back.db"]),
    "import": (["--db", "d.db", "import", "jsonl-log", "decisions.jsonl"], ["d.db"], [r"importing .* \d+ items"]),
    "add": (["--db", "e.db", "add", "@many.ndjson"], ["e.db"],
            [r"adding: checking +\d+ lines", rf"adding: writing .*\d+/{RECORDS} records"]),
    "doctor": (["--db", "a.db", "--json", "doctor"], [], ["checking"]),
}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_the_result_starts_on_its_own_line_and_no_frame_is_left(store, name):
    args, creates, shown = COMMANDS[name]
    _fresh(store, *creates)
    code, piped, _ = run_cli(*args, cwd=store, env=ENV, text=False)
    assert code == 0
    _fresh(store, *creates)
    code, screen = on_terminal(args, store)
    assert code == 0
    seen = "\n".join(screen.seen)
    for pattern in shown:
        assert re.search(pattern, seen), f"{pattern!r} never shown while {name} worked:\n{seen[-2000:]}"
    final = screen.text()
    assert final == piped.decode("utf-8"), final  # the result and nothing else, from column 0
    assert final.startswith("{") and screen.cursor[0] == 0
    assert not any(BAR in row or SPINNER & set(row) for row in screen.rows)


@pytest.mark.parametrize("name", ["apply", "restore", "backup", "restore-backup", "add"])
def test_a_phase_of_unknown_length_has_no_bar(store, name):
    """While add checks its input, after reading (committing, verifying) and in every backup phase, the spinner and the clock
    show the work going on; no bar stands frozen at its last value."""
    args, creates, _ = COMMANDS[name]
    _fresh(store, *creates)
    code, screen = on_terminal(args, store)
    assert code == 0
    barless = [row for row in screen.seen if re.search(r"\w: (checking|committing|verifying|digest|syncing|copying)", row)]
    assert barless and not any(BAR in row for row in barless)
    assert all(SPINNER & set(row) for row in barless)


def test_snapshot_to_a_file_leaves_the_terminal_clean(store):
    with open(store / "out.ndjson", "wb") as out:
        code, screen = on_terminal(["--db", "a.db", "snapshot"], store, stdout=out)
    assert code == 0 and screen.text() == ""
    assert any("snapshot" in row and "lines" in row for row in screen.seen)
    assert (store / "out.ndjson").read_bytes() == (store / "snap.ndjson").read_bytes()


def test_the_reports_of_add_also_start_at_column_0(store):
    _fresh(store, "f.db")
    code, screen = on_terminal(["--db", "f.db", "add", "--reports", "@many.ndjson"], store)
    assert code == 0
    # the screen keeps the last ROWS rows of the long array: its closing bracket at column 0
    assert screen.text().endswith("  }\n]\n") and screen.cursor[0] == 0
    assert not any(BAR in row or SPINNER & set(row) for row in screen.rows)
    reports = json.loads(run_cli("--db", "g.db", "add", "--reports", "@many.ndjson", cwd=store, env=ENV, text=False)[1])
    assert len(reports) == RECORDS
