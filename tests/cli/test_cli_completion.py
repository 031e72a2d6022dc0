"""Shell completion of paths and known words (issue 31 item 4, fgraph/cli/completion.py).

The end-to-end tests type into a real interactive bash on a pseudo-terminal, with the script
``fgraph --show-completion bash`` prints loaded, press Tab and read back the line bash completed:
click's script answers a path with ``compopt -o default`` (bash's own file-name completion),
so only the effective line proves that ``--db fac<Tab>`` becomes ``--db facts.db``. The
protocol tests check what ``_FGRAPH_COMPLETE=bash_complete fgraph`` emits for every path.
"""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

import click
import pytest

from fgraph.cli import completion
from fgraph.cli.main import cli, run
from tests.support.cli import run_cli

FGRAPH = str(Path(sys.executable).with_name("fgraph"))
FILES = ("facts.db", "memory.jsonl", "reviewed.ndjson", "schema.json")
needs_bash = pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")


@pytest.fixture
def workdir(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    for name in FILES:
        (work / name).write_text("{}\n")
    return work


def bash_tab(keys: str, cwd: Path, timeout: float = 60) -> tuple[str, str]:
    """Type ``keys`` (Tabs included) into ``bash -i`` with fgraph's completion loaded; return the
    line as bash completed it and everything the terminal showed (listings of several matches)."""
    import pty
    master, slave = pty.openpty()
    home = cwd.parent / "home"
    home.mkdir(exist_ok=True)
    env = {"PATH": os.path.dirname(FGRAPH) + os.pathsep + "/usr/bin:/bin", "HOME": str(home), "TERM": "dumb",
           "INPUTRC": "/dev/null", "HISTFILE": "/dev/null", "PS1": "READY> ", "LANG": "C.UTF-8"}
    proc = subprocess.Popen(["bash", "--norc", "--noprofile", "-i"], stdin=slave, stdout=slave, stderr=slave,
                            cwd=cwd, env=env, start_new_session=True)
    os.close(slave)
    seen = b""

    def read_until(done) -> None:
        nonlocal seen
        deadline = time.monotonic() + timeout
        while not done(seen) and time.monotonic() < deadline:
            if select.select([master], [], [], 0.2)[0]:
                try:
                    chunk = os.read(master, 65536)
                except OSError:
                    return
                if not chunk:
                    return
                seen += chunk

    try:
        os.write(master, b"bind 'set bell-style none'; bind 'set show-all-if-ambiguous on'; "
                         b"eval \"$(fgraph --show-completion bash)\"\n")
        read_until(lambda out: out.count(b"READY> ") >= 2)
        # Tab completes in place; then Ctrl-A and "echo RESULT: " make bash print the completed line
        os.write(master, keys.encode() + b"\x01echo RESULT: \n")
        read_until(lambda out: b"\nRESULT: " in out and out.rstrip().endswith(b"READY>"))
        os.write(master, b"exit\n")
        proc.wait(timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    text = seen.decode("utf-8", "replace")
    results = [line.strip() for line in text.split("\n") if line.startswith("RESULT: ")]
    assert results, text
    return results[-1][len("RESULT: "):], text


@needs_bash
@pytest.mark.parametrize("typed, completed", [
    ("fgraph --db fac\t", "fgraph --db facts.db"),
    ("fgraph import mcp-memory mem\t", "fgraph import mcp-memory memory.jsonl"),
    ("fgraph --db facts.db apply rev\t", "fgraph --db facts.db apply reviewed.ndjson"),
    ("fgraph restore rev\t", "fgraph restore reviewed.ndjson"),
    ("fgraph sync --from fac\t", "fgraph sync --from facts.db"),
    ("fgraph schema-check sch\t", "fgraph schema-check schema.json"),
    ("fgraph schema-apply @sch\t", "fgraph schema-apply @schema.json"),
    ("fgraph add @sch\t", "fgraph add @schema.json"),
    ("fgraph q @sch\t", "fgraph q @schema.json"),
    ("fgraph undo 70 --source rev\t", "fgraph undo 70 --source reviewed.ndjson"),
    ("fgraph datoms av\t", "fgraph datoms avet"),
    ("fgraph datoms --source hi\t", "fgraph datoms --source history"),
    ("fgraph declare x --type vec\t", "fgraph declare x --type vector"),
    ("fgraph import mc\t", "fgraph import mcp-memory"),
])
def test_bash_completes_the_word(workdir, typed, completed):
    line, shown = bash_tab(typed, workdir)
    assert line == completed, shown


@needs_bash
@pytest.mark.parametrize("typed, offered", [
    ("fgraph apply \t", FILES),
    ("fgraph import mcp-memory \t", FILES),
    ("fgraph datoms \t", completion.DATOMS_INDEXES),
    ("fgraph import \t", ("mcp-memory", "jsonl-log")),
])
def test_bash_lists_every_candidate(workdir, typed, offered):
    line, shown = bash_tab(typed, workdir)
    assert line == typed.strip()  # several candidates: listed, the line left as it was
    listing = shown.split(typed.rstrip("\t"), 1)[1]
    for word in offered:
        assert word in listing, shown


@needs_bash
def test_inline_data_is_not_completed_as_a_file(workdir):
    """``add DATA`` takes inline JSON: a bare word is not a file name there, only ``@file`` is."""
    assert bash_tab("fgraph add sch\t", workdir)[0] == "fgraph add sch"


# ----------------------------------------------------------------- the protocol and the types

def emitted(words: list[str], cwd: Path) -> list[str]:
    """What click's completion protocol answers bash for the last word of ``words``."""
    env = dict(os.environ, COMP_WORDS=" ".join(words), COMP_CWORD=str(len(words) - 1),
               _FGRAPH_COMPLETE="bash_complete")
    code, out, err = run_cli(env=env, cwd=cwd, timeout=60)
    assert code == 0, err
    return out.split()


PATH_PLACES = [
    ["fgraph", "--db", ""], ["fgraph", "info", "--db", ""], ["fgraph", "apply", ""], ["fgraph", "restore", ""],
    ["fgraph", "verify", ""], ["fgraph", "backup", ""], ["fgraph", "restore-backup", ""],
    ["fgraph", "restore-backup", "a.db", ""], ["fgraph", "import", "jsonl-log", ""], ["fgraph", "sync", "--from", ""],
    ["fgraph", "sync", "--to", ""], ["fgraph", "schema-check", ""], ["fgraph", "schema-apply", ""],
    ["fgraph", "mcp", "--embed-cmd", ""], ["fgraph", "search", "--embed-cmd", ""], ["fgraph", "undo", "70", "--source", ""],
]


@pytest.mark.parametrize("words", PATH_PLACES, ids=" ".join)
def test_every_path_is_answered_with_the_file_type(tmp_path, words):
    assert emitted(words, tmp_path) == ["file,"]


def test_every_path_parameter_completes_files():
    """A parameter that names a file (by its metavar or name) uses a completing type, so a new
    path option cannot come back as plain text (browse has none)."""
    pathish = {"PATH", "FILE", "SRC", "DEST", "BACKUP", "CMD"}
    missing = []
    for name, command in cli.commands.items():
        for param in command.params:
            label = (param.metavar or param.name or "").upper()
            if (label in pathish or param.name in ("db", "source", "embed_cmd")) and not isinstance(
                    param.type, (completion.FilePath, completion.DataText, completion.Words)):
                missing.append(f"{name} {param.name}")
    assert missing == []


def test_the_words_are_what_the_library_accepts():
    from fgraph.core.values import LOGICAL_TYPES
    from fgraph.query.datoms import INDEXES
    assert completion.DATOMS_INDEXES == tuple(INDEXES)
    assert sorted(completion.VALUE_TYPES) == sorted(LOGICAL_TYPES)


def test_completing_types_accept_and_refuse_what_plain_text_did(tmp_path, capfd):
    """The types only complete: a value is converted as click's STRING converts it, and the
    library keeps its checks and its messages."""
    for kind in (completion.PATH, completion.DataText(), completion.DataText(plain_paths=True),
                 completion.Words("a")):
        assert kind.name == click.STRING.name
        assert kind.convert("any text", None, None) == "any text"
        assert kind.convert("@", None, None) == "@"
    db = str(tmp_path / "x.db")
    assert run(["--db", db, "init"]) == 0
    capfd.readouterr()
    assert run(["--db", db, "datoms", "aevt"]) == 1
    assert "QueryError: datoms index 'aevt' is not one of eavt, avet, vaet" in capfd.readouterr().err
    assert run(["--db", db, "datoms", "--source", "past"]) == 1
    assert "QueryError: datoms source 'past' is not valid" in capfd.readouterr().err
    assert run(["--db", str(tmp_path), "info"]) == 1  # a directory: the project's own refusal
    assert capfd.readouterr().err.startswith(("FormatError:", "NotFound:"))
