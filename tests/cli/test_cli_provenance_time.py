"""Provenance and time on the CLI (issue 16 part 3), through the real executable on real files:
``--by/--source/--meta`` (and ``FGRAPH_BY``) on add, retract, declare and undo reach the receipt,
the event and ``history``/``why``; every option that takes a transaction also takes an RFC 3339
time or a duration, resolved to the last transaction at or before it, with a message naming
the time when there is none; ``info`` shows ``latest_tx`` and its time for ``--if-basis-tx``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.support.cli import CliResult, run_cli

START = 1767225600000000  # 2026-01-01T00:00:00Z; each transaction is stamped 1 s after the last


def cli(db: Path, *args, clock: int = START, **env) -> CliResult:
    """``run_cli`` with only the ``clock``, this module's seed and ``env`` in the environment."""
    return run_cli(*args, db=db, timeout=60,
                   env={"FGRAPH_CLOCK": str(clock), "FGRAPH_EVENT_SEED": "cli-provenance", **env})


def data(db: Path, *args, **kw):
    code, out, err = cli(db, "--json", *args, **kw)
    assert code == 0, err
    return json.loads(out) if out.strip() else None


@pytest.fixture
def store(tmp_path):
    db = tmp_path / "p.db"
    data(db, "add", '{"id":"ada","person/born":1815}', "--by", "alice", "--source", "doc:1", "--meta", '{"k":[1]}')
    data(db, "add", '{"id":"ada","person/born":1816}', FGRAPH_BY="env-bob")
    data(db, "retract", "ada", "person/born", "1816", "--by", "carol", "--source", "review")
    data(db, "declare", "person/email", "--type", "text", "--by", "dba", "--meta", "null")
    return db


def events(db: Path) -> list:
    code, out, _ = cli(db, "tail")
    return [json.loads(line) for line in out.splitlines()]


def test_provenance_options_reach_the_event_history_and_why(store):
    first, second, third, fourth = events(store)
    assert (first["by"], first["source"], first["meta"]) == ("alice", "doc:1", {"k": [1]})
    assert second["by"] == "env-bob" and "source" not in second and "meta" not in second
    assert (third["by"], third["source"]) == ("carol", "review") and third["retracted"]
    assert fourth["by"] == "dba" and fourth["meta"] is None  # a JSON null meta is supplied, not absent
    history = data(store, "history", "ada", "person/born")
    assert [(h["by"], h.get("source")) for h in history] == [("alice", "doc:1"), ("env-bob", None)]
    assert history[1]["rx_by"] == "carol"
    code, _, _ = cli(store, "add", '{"id":"ada","person/born":1817}', "--source", "why-test")
    why = data(store, "why", "ada", "person/born")
    assert why[0]["provenance"]["fgraph/source"] == "why-test"


def test_undo_takes_provenance_too(store):
    latest = data(store, "info")["latest_tx"]
    first = data(store, "history", "ada")[0]["tx"]
    report = data(store, "undo", str(first), "--by", "ops", "--source", "incident-7", "--meta", '{"why":"typo"}')
    receipt = data(store, "tx", str(report["tx"]))
    assert (receipt["by"], receipt["source"], receipt["meta"]) == ("ops", "incident-7", {"why": "typo"})
    assert report["tx"] > latest
    assert cli(store, "add", "{}", "--meta", "{bad")[2].startswith("TypeError: --meta is not valid JSON")


def test_info_shows_the_latest_transaction_for_if_basis_tx(store):
    info = data(store, "info")
    assert info["latest_tx"] == events_tx(store) and info["latest_at"] == "2026-01-01T00:00:04.000000Z"
    stale = info["latest_tx"] - 1
    assert cli(store, "add", '{"id":"x","a/b":1}', "--if-basis-tx", stale)[2].startswith("Conflict: ")
    assert cli(store, "add", '{"id":"x","a/b":1}', "--if-basis-tx", info["latest_tx"])[0] == 0


def events_tx(db: Path) -> int:
    return data(db, "history", "person/email")[-1]["tx"]  # the declaration was the last transaction


def test_times_and_durations_on_every_option_that_takes_a_transaction(store):
    now = START + 10_000_000  # ten seconds after the store began: transactions are at :01 to :04
    latest = data(store, "info")["latest_tx"]
    assert cli(store, "tail", "--since", "2026-01-01T00:00:03Z")[1].count("\n") == 1
    assert cli(store, "tail", "--since", "8s", clock=now)[1].count("\n") == 2  # after the :02 transaction
    assert cli(store, "tail", "--since", "1s", clock=now)[1] == ""
    diff = data(store, "diff", "9s", "7s", clock=now)  # (:01, :03]
    assert [f["v"] for f in diff["asserted"] if f["a"] == "person/born"] == [1816]
    assert data(store, "get", "ada", "--at", "8s", clock=now) == {"person/born": 1816}
    assert data(store, "get", "ada", "--at", "2026-01-01T00:00:01Z") == {"person/born": 1815}
    assert len(data(store, "history", "ada", "--at", "9s", clock=now)) == 1
    assert "## tx" in cli(store, "context", "--by", "change", "--since", "9s", clock=now)[1]
    assert data(store, "get", "ada", "--at", latest) == {}


@pytest.mark.parametrize("args", [["diff", "1767225599000000", "0s"], ["history", "ada", "--at", "65"]])
def test_an_integer_instant_before_the_first_transaction_keeps_the_published_not_found(store, args):
    # an integer that is no transaction is the contract's µs instant for at and diff (spec 09 §5: at(65) is NotFound)
    code, out, err = cli(store, *args, clock=START + 10_000_000)
    assert code == 1 and out == "" and err.startswith("NotFound: ")
    assert "is before the first transaction; this store holds 5 transactions, from 64 at 2026-01-01T00:00:00.000000Z" in err
    assert "outside [64" not in err


@pytest.mark.parametrize("args", [["tail", "--since", "2025-12-31T23:59:59Z"], ["get", "ada", "--at", "2025-12-31T23:00:00Z"],
                                  ["context", "--since", "2025-06-01T00:00:00Z"], ["diff", "2025-01-01T00:00:00Z", "64"]])
def test_an_rfc3339_instant_before_the_first_transaction_is_the_beginning(store, args):
    """Decision T2 (issue 49 item 2): an RFC 3339 time before the first transaction is transaction 64
    (for get --at the genesis view, where ada is not yet)."""
    got = cli(store, *args, clock=START + 10_000_000)
    beginning = [a if not a.startswith("2025") else "64" for a in args]
    assert got == cli(store, *beginning, clock=START + 10_000_000) and "before the first transaction" not in got[2]
    assert got[0] == (1 if args[0] == "get" else 0)


def test_a_duration_longer_than_the_store_is_its_beginning(store):
    """Decision T1 (issue 30 item 1): a window reaching before the first transaction starts there."""
    now = START + 10_000_000
    everything = cli(store, "tail", "--since", "64")[1]
    assert everything.count("\n") == 4
    for window in ("2d", "11s", "999999999w"):
        assert cli(store, "tail", "--since", window, clock=now) == (0, everything, "")
        assert data(store, "diff", window, "0s", clock=now) == data(store, "diff", "64", "0s", clock=now)
        assert data(store, "context", "--since", window, clock=now) == data(store, "context", clock=now)
        # a view there is the genesis view: the store as it was before anything was written
        assert cli(store, "get", "ada", "--at", window, clock=now)[2].startswith("NotFound: entity 'ada'")
        assert data(store, "q", "--at", window, '{"find":["?b"],"where":[["?e","person/born","?b"]]}',
                    clock=now)["rows"] == []
        assert data(store, "datoms", "--at", window, clock=now)["basis_tx"] == 64


@pytest.mark.parametrize("args", [["diff", "yesterday", "0s"], ["diff", "1x", "0s"]])
def test_a_time_that_is_no_time_is_a_usage_error(store, args):
    code, _, err = cli(store, *args)
    assert code == 2 and "not a transaction id, an event UUID, an RFC 3339 time or a duration" in err


def test_integer_since_keeps_the_local_tx_meaning_of_spec_04(store):
    assert cli(store, "tail", "--since", "63")[2].startswith("TypeError: --since 63 is outside [64, 2^63-1]")
    assert cli(store, "tail", "--since", "65")[1] == cli(store, "tail", "--since", "64")[1]
