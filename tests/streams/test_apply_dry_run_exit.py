"""``apply --dry-run`` exits as ``apply`` would (issue 49 item 3): 0 only when apply would commit,
else exit 1 with the error apply gives — same name, same message — after its report, so
``apply --dry-run && apply`` never goes ahead to fail. The old code exited 0 on a conflicting stream."""

from __future__ import annotations

import json
import subprocess

import pytest

import fgraph
from tests.support.cli import FGRAPH, clean_env, run_cli
from tests.support.constants import CONFORMANCE_CLOCK as START
from tests.support.stores import seeded_db


@pytest.fixture
def stores(tmp_path):
    """A receiver holding ada, and a source's two fresh events (bob, cy), as stream lines."""
    receiver = tmp_path / "r.db"
    with seeded_db(str(receiver)) as db:
        db.transact({"id": "ada", "p/name": "Ada"})
        own = next(db.iter_events())
    with fgraph.connect(":memory:", clock=START + 3_600_000_000) as source:
        source.transact({"id": "bob", "p/name": "Bob"})
        source.transact({"id": "cy", "p/name": "Cy"})
        fresh = list(source.iter_events())
    edited = json.loads(own)
    edited["asserted"][0][2] = "Eve"                         # the receiver's own event UUID, another payload
    return receiver, fresh, json.dumps(edited, separators=(",", ":"), sort_keys=True)


def _run(receiver, tmp_path, lines, *options):
    stream = tmp_path / "s.ndjson"
    stream.write_text("".join(line + "\n" for line in lines))
    return run_cli("apply", str(stream), *options, db=receiver, env=clean_env())


def _digest(receiver):
    with fgraph.connect(str(receiver), read_only=True) as db:
        return db.latest_tx(), db.logical_digest()


@pytest.mark.parametrize("shape", ["conflict", "conflict-then-malformed", "malformed"])
def test_a_dry_run_refuses_as_apply_does(stores, tmp_path, shape):
    receiver, fresh, edited = stores
    lines = {"conflict": [fresh[0], edited, fresh[1]],
             "conflict-then-malformed": [fresh[0], edited, '{"fgraph":"event/1"}'],
             "malformed": [fresh[0], "{not json", edited]}[shape]
    before = _digest(receiver)
    dry = _run(receiver, tmp_path, lines, "--dry-run")
    assert _digest(receiver) == before
    real = _run(receiver, tmp_path, lines)
    assert _digest(receiver) == before   # all or nothing
    assert real.returncode == 1 and real.stdout == ""
    assert (dry.returncode, dry.stderr) == (real.returncode, real.stderr)
    name = "TypeError" if shape == "malformed" else "Conflict"
    assert dry.stderr.startswith(f"{name}: line 2: ")
    if shape == "conflict":   # the report is still printed, listing every conflict
        report = json.loads(dry.stdout)
        assert report["conflicting"] == 1 and report["conflicts"][0]["line"] == 2 and report["new"] == 2


def test_a_dry_run_of_a_stream_apply_commits_exits_0(stores, tmp_path):
    receiver, fresh, _ = stores
    dry = _run(receiver, tmp_path, fresh, "--dry-run")
    assert dry.returncode == 0 and dry.stderr == "" and json.loads(dry.stdout)["new"] == 2
    assert _run(receiver, tmp_path, fresh).returncode == 0


def test_dry_run_and_apply_does_not_go_ahead(stores, tmp_path):
    receiver, fresh, edited = stores
    stream = tmp_path / "s.ndjson"
    stream.write_text(f"{fresh[0]}\n{edited}\n")
    script = f'"{FGRAPH}" --db "{receiver}" apply --dry-run "{stream}" >/dev/null && echo went-ahead'
    proc = subprocess.run(["sh", "-c", script], env=clean_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "went-ahead" not in proc.stdout and proc.stderr.startswith("Conflict: line 2: ")
