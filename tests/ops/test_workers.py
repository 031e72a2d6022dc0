"""Proves fgraph/ops/workers.py: a child's JSON lines are read one by one, and a child that cannot
start, dies, or prints anything else is stopped and reaped, so the caller does the work itself."""

from __future__ import annotations

import sys

from fgraph.ops.workers import LineChild, child_main, spawn


def test_lines_are_read_in_order_then_the_child_is_reaped():
    child = LineChild(spawn("print('{\"a\": 1}'); print('{\"b\": 2}')"))
    assert child.read("a") == {"a": 1} and child.read() == {"b": 2}
    child.stop()
    assert child.proc is None and not child.failed


def test_anything_else_gives_up_and_kills_the_child():
    child = LineChild(spawn("import time; print('not json', flush=True); time.sleep(60)"))
    proc = child.proc
    assert child.read() is None and child.failed and child.proc is None
    assert proc.poll() is not None
    wrong_key = LineChild(spawn("print('{\"a\": 1}')"))
    assert wrong_key.read("b") is None and wrong_key.failed


def test_a_child_that_cannot_start_is_none(monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-such-python"))
    assert spawn("print(1)") is None
    assert LineChild(None).read() is None


def test_a_failing_child_main_exits_non_zero():
    def main(argv):
        raise RuntimeError("boom")
    assert child_main(main, []) == 1
    assert child_main(lambda argv: 0, []) == 0


def test_the_working_directory_never_shadows_the_installed_package(monkeypatch, tmp_path):
    """A child started where the user stands imports the installed modules, not a same-named file
    there (``python -c`` alone puts the working directory first on sys.path)."""
    (tmp_path / "orjson.py").write_text("raise SystemExit('the working directory was imported')\n")
    monkeypatch.chdir(tmp_path)
    child = LineChild(spawn("import orjson, sys; print(orjson.dumps({'path': sys.path[0]}).decode())"))
    answer = child.read("path")
    child.stop()
    assert answer is not None and answer["path"] not in ("", str(tmp_path))
