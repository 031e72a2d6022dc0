"""fgraph.cli.long_running: what add prints (decision A3: a summary for NDJSON, every report with
--reports, byte for byte the list the library returns and the published runtime prints), and that
the long commands print their result once (the screen itself: tests/cli/test_progress_screen.py)."""

from __future__ import annotations

import io
import json

import fgraph
from fgraph.bridges.add import ingest
from fgraph.cli import long_running
from fgraph.core.canonical import dumps
from fgraph.core.mappings import plain
from tests.support.cli import invoke_cli

REPORTS = [
    {"asserted": [{"a": "p/s", "e": 65, "v": "Ådä ✓ 𝄞\n"}], "ids": {}, "status": "applied", "tx": 67},
    {"asserted": [], "ids": {"x": 70}, "status": "noop", "tx": None, "v": {"json": [1, {"b": None}, [], {}]}},
    {"f": 1e-7, "n": -(2**63)},
]


def _spooled(reports, canonical: bool) -> bytes:
    spool, out = long_running.ReportSpool(canonical), io.BytesIO()
    try:
        for report in reports:
            spool.add(report)
        spool.write_to(out)
    finally:
        spool.close()
    return out.getvalue()


def test_the_spool_prints_what_printing_the_list_prints(monkeypatch):
    for reports in ([], REPORTS[:1], REPORTS, REPORTS * 50):
        assert _spooled(reports, True) == (dumps(reports) + "\n").encode()
        assert _spooled(reports, False) == (json.dumps(reports, indent=2, sort_keys=True, ensure_ascii=False)
                                            + "\n").encode()
    monkeypatch.setattr(long_running, "SPOOL_IN_MEMORY", 64)  # past it the spool is a temporary file
    assert _spooled(REPORTS * 20, True) == (dumps(REPORTS * 20) + "\n").encode()


def _lines(count: int, first: int = 0) -> str:
    return "".join(json.dumps({"id": f"n{i}", "p/n": i}) + "\n" for i in range(first, first + count))


def test_ndjson_prints_a_summary_and_reports_on_request(tmp_path, deterministic_env):
    (tmp_path / "a.ndjson").write_text(_lines(5))
    code, out, err = invoke_cli(["--db", tmp_path / "s.db", "--json", "add", f"@{tmp_path / 'a.ndjson'}"])
    with fgraph.connect(str(tmp_path / "s.db")) as db:
        latest = db.latest_tx()
    assert (code, err) == (0, "") and json.loads(out) == {"applied": 5, "basis_tx": latest, "last_tx": latest,
                                                         "noop": 0, "transactions": 5}
    code, out, _ = invoke_cli(["--db", tmp_path / "s.db", "--json", "add", f"@{tmp_path / 'a.ndjson'}"])
    assert json.loads(out) == {"applied": 0, "basis_tx": latest, "last_tx": None, "noop": 5, "transactions": 5}

    for mode in ("--json", None):
        path = tmp_path / f"r{mode}.db"
        code, out, err = invoke_cli(["--db", path, *([mode] if mode else []), "add", "--reports", "-"], input=_lines(4))
        with fgraph.connect(str(tmp_path / f"lib{mode}.db")) as db:
            expected = plain(ingest.add(db, _lines(4)))
        assert (code, err) == (0, "")
        assert out == (dumps(expected) + "\n" if mode else
                       json.dumps(expected, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def test_one_record_prints_its_report_with_or_without_reports(tmp_path, deterministic_env):
    record = '{"id":"ada","p/s":"x"}'
    outputs = []
    for flags, name in (([], "a.db"), (["--reports"], "b.db")):
        code, out, err = invoke_cli(["--db", tmp_path / name, "--json", "add", *flags, record])
        assert (code, err) == (0, "")
        outputs.append(out)
    with fgraph.connect(str(tmp_path / "c.db")) as db:
        assert outputs == [dumps(plain(db.transact(json.loads(record)))) + "\n"] * 2


def test_reports_and_batch_size_together_are_a_usage_error(tmp_path):
    code, out, err = invoke_cli(["--db", tmp_path / "u.db", "add", "--reports", "--batch-size", "2", "-"],
                            input=_lines(3))
    assert code == 2 and out == "" and "--reports" in err and not (tmp_path / "u.db").exists()


def test_a_failing_record_prints_no_report_as_published(tmp_path):
    bad = _lines(2) + json.dumps({"id": "n9", "p/n": "text now"}) + "\n"
    invoke_cli(["--db", tmp_path / "f.db", "add", '{"id":"n9","p/n":1}'])
    invoke_cli(["--db", tmp_path / "f.db", "declare", "p/n", "--type", "int"])
    for flags in ([], ["--reports"]):
        code, out, err = invoke_cli(["--db", tmp_path / "f.db", "--json", "add", *flags, "-"], input=bad)
        assert code == 1 and out == "" and err.startswith("TypeError"), err
    with fgraph.connect(str(tmp_path / "f.db")) as db:
        assert db.entity("n1")["p/n"] == 1  # the records before the failing one stay committed
