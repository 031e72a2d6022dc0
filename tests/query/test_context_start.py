"""A context an agent can start a session from (issue 50 item 1): on a mixed store (a decision
log of decisions and preferences imported first, then an MCP memory file, whose records carry no
time of their own) the default ``fgraph context`` is the prompt block, leads with the dated
records, windows by their own times, takes several types, names the types a store has, and
meets the decision log's own loader point by point: the 10 newest decisions and preferences,
newest first, with label, rationale and tags, within 3,000 characters (decision C4, docs/cli.md).
"""

from __future__ import annotations

import json
import re

import pytest

from fgraph.core.values import parse_instant
from tests.support.cli import run_cli
from tests.support.paths import FIXTURES

MEMORY = FIXTURES / "import" / "mcp-memory.jsonl"
NOW = parse_instant("2026-03-20T12:00:00Z")     # the clock of every run: one day after the newest record
ENV = {"FGRAPH_CLOCK": str(NOW), "FGRAPH_EVENT_SEED": "context-start", "PATH": ""}
TAGS = [["Payments", "Redis"], ["Refund Flow"], ["Payments", "Ledger"], ["Auth Service"], ["Ledger"]]


def _record(n: int) -> dict:
    """Record ``n`` (0 oldest): a preference every fourth record, a decision otherwise, one per
    ~1.5 days up to 2026-03-19, the same author in runs of three."""
    kind = "preference" if n % 4 == 3 else "decision"
    day, hour = 1 + n * 3 // 2, 8 + n % 9
    return {"id": f"rec-{n:02d}", "type": kind,
            "content": {"what": f"{kind.title()} number {n} about the payments platform",
                        "why": f"Reason {n}: it keeps the on-call load small"},
            "entities": TAGS[n % len(TAGS)], "identity": {"user_id": ["alice", "bob"][n // 3 % 2]},
            "metadata": {"timestamp": f"2026-03-{day:02d}T{hour:02d}:00:00Z"}}


RECORDS = [_record(n) for n in range(13)]


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mixed")
    log = folder / "decisions.jsonl"
    log.write_text("".join(json.dumps(record) + "\n" for record in RECORDS), encoding="utf-8")
    db = folder / "m.db"
    run_cli("import", "jsonl-log", log, db=db, env=ENV, check=True)
    run_cli("import", "mcp-memory", MEMORY, db=db, env=ENV, check=True)   # imported last: the newest writes
    return db, folder


def _context(db, *args):
    return run_cli("context", *args, db=db, env=ENV, timeout=60)


def _entities(db, *args):
    """The entity view named explicitly, so a test of a finding fails on that finding alone."""
    return _context(db, "--by", "entity", *args)


def _newest(kinds=("decision", "preference"), n=10):
    dated = sorted((r for r in RECORDS if r["type"] in kinds), key=lambda r: r["metadata"]["timestamp"], reverse=True)
    return dated[:n]


def test_the_default_context_is_the_prompt_block_not_bookkeeping_facts(mixed):
    db, _ = mixed
    proc = _context(db)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("- [") and "## tx" not in proc.stdout
    assert "decision/id" not in proc.stdout and '{"instant"' not in proc.stdout and '{"ref"' not in proc.stdout
    changes = _context(db, "--by", "change")      # the per-fact view stays one option away
    assert changes.returncode == 0 and changes.stdout.startswith("## tx ")


def test_an_untimed_memory_import_does_not_bury_the_dated_decisions(mixed):
    db, _ = mixed
    lines = _entities(db, "--limit", "10").stdout.splitlines()
    shown = [line for line in lines if line.startswith("- ")]
    newest = _newest(n=len(shown))
    assert all(record["content"]["what"] in line for record, line in zip(newest, shown)), shown
    # the memory entities follow once the dated records are all shown
    everything = _entities(db, "--limit", "100", "--budget", "20000").stdout
    assert everything.index("[Person] Ada Lovelace") > everything.index(RECORDS[0]["content"]["what"])


@pytest.mark.parametrize("args", [("--type", "decision", "--type", "preference"), ("--type", "decision,preference"),
                                  ("--type", "Decision, preference")])
def test_type_repeats_and_takes_a_comma_list(mixed, args):
    db, _ = mixed
    proc = _entities(db, *args)
    assert proc.returncode == 0, proc.stderr
    assert "[Decision]" in proc.stdout and "[Preference]" in proc.stdout and "[Person]" not in proc.stdout


def test_an_unknown_type_names_the_types_the_store_has(mixed):
    db, _ = mixed
    proc = _entities(db, "--type", "decisoin")
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.startswith("TypeError: context type 'decisoin' is unknown")
    assert "decision" in proc.stderr and "preference" in proc.stderr and "person" in proc.stderr


def test_a_time_window_reads_each_records_own_time(mixed):
    db, _ = mixed
    proc = _entities(db, "--since", "7d", "--limit", "100", "--budget", "20000")
    assert proc.returncode == 0, proc.stderr
    inside = [r for r in RECORDS if parse_instant(r["metadata"]["timestamp"]) > NOW - 7 * 86_400_000_000]
    assert 0 < len(inside) < len(RECORDS)
    for record in RECORDS:
        assert (record["content"]["what"] in proc.stdout) == (record in inside), record["id"]


def test_provenance_is_the_file_name_and_line_once_per_run(mixed):
    db, folder = mixed
    text = _entities(db, "--limit", "100", "--budget", "20000").stdout
    assert str(folder) not in text and str(MEMORY.parent) not in text
    assert "from mcp-memory.jsonl:" in text
    lines = [line for line in text.splitlines() if " number " in line]   # the decision log's records
    assert re.search(r" by alice from decisions\.jsonl:13$", lines[0]), lines[0]
    assert re.search(r" by bob from decisions\.jsonl:12$", lines[1]), lines[1]    # another author: a new run
    assert lines[2].endswith(", line 11") and " by " not in lines[2]      # the same author, the same file
    assert all(re.search(r"( by \w+ from decisions\.jsonl:\d+|, line \d+)$", line) for line in lines)


def test_it_meets_the_decision_logs_own_loader(mixed):
    """10 newest decisions and preferences, newest first, label, rationale, tags, <= 3,000 characters,
    and an exact call that gets the rest."""
    db, _ = mixed
    proc = _entities(db, "--type", "decision,preference")
    assert proc.returncode == 0, proc.stderr
    assert len(proc.stdout.rstrip("\n")) <= 3000
    lines = proc.stdout.rstrip("\n").split("\n")
    items, footer = lines[:-1], lines[-1]
    assert len(items) == 10
    for record, line in zip(_newest(), items):
        label = f"[{record['type'].title()}] {record['content']['what']}"
        assert line.startswith(f"- {label} — because: {record['content']['why']} — tags: "
                               f"{', '.join(record['entities'])} — at {record['metadata']['timestamp']}"), line
    rest = footer.split("get them with: ", 1)[1]
    assert rest.startswith("fgraph context ")
    more = _entities(db, *rest.split()[2:])
    assert more.returncode == 0 and "left out" not in more.stdout
    assert all(record["content"]["what"] in more.stdout for record in RECORDS)


def test_a_relogged_decision_is_one_item_at_its_newest_version(tmp_path):
    """What the loader does not do: a decision logged again under its id is one line, the newest."""
    first, second = _record(12), dict(_record(12), content={"what": "Decision twelve, revised", "why": "Measured"})
    second["metadata"] = {"timestamp": "2026-03-19T15:00:00Z"}
    log = tmp_path / "decisions.jsonl"
    log.write_text(json.dumps(first) + "\n" + json.dumps(second) + "\n", encoding="utf-8")
    run_cli("import", "jsonl-log", log, db=tmp_path / "r.db", env=ENV, check=True)
    text = _entities(tmp_path / "r.db").stdout
    assert text.startswith("- [Decision] Decision twelve, revised — because: Measured — ")
    assert "number 12" not in text and len(text.splitlines()) == 1
