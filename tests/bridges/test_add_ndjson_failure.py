"""A multi-record ``add`` that fails names the failing line and how many records were committed
before it (issue 49 item 3). Spec 09 §4.1: each NDJSON line is its own transaction, a failing line
stops the run, earlier lines stay committed and nothing is printed — stdout keeps those bytes (empty);
the error keeps its published name. The old code said only ``TypeError: attribute 'p/n' requires text``."""

from __future__ import annotations

import pytest

import fgraph
from tests.support.cli import clean_env, run_cli

GOOD = ['{"id":"a","p/n":"A"}', "", '{"id":"b","p/n":"B"}']
BAD = '{"id":"c","p/n":1}'


@pytest.fixture
def store(tmp_path):
    path = tmp_path / "n.db"
    run_cli("declare", "p/n", "--type", "text", db=path, env=clean_env(), check=True)
    return path


def _transactions(path):
    with fgraph.connect(str(path), read_only=True) as db:
        return db.stats()["transactions"]


@pytest.mark.parametrize("how", ["@file", "stdin", "stdin --reports"])
def test_the_failing_line_and_the_records_committed_before_it(store, tmp_path, how):
    text = "\n".join([*GOOD, BAD, '{"id":"d","p/n":"D"}']) + "\n"
    before = _transactions(store)
    if how == "@file":
        (tmp_path / "in.ndjson").write_text(text)
        code, out, err = run_cli("add", f"@{tmp_path / 'in.ndjson'}", db=store, env=clean_env())
    else:
        code, out, err = run_cli("add", "-", *how.split()[1:], db=store, env=clean_env(), input=text)
    assert (code, out) == (1, "")
    assert err.startswith("TypeError: line 4: attribute 'p/n' requires text, but 1 is int "
                          "(the 2 records before it stay committed; it and what follows were not written); ")
    assert err.rstrip().endswith("then add the input again from line 4 on")
    assert _transactions(store) == before + 2


def test_a_first_record_that_fails_says_nothing_was_committed(store):
    code, out, err = run_cli("add", "-", db=store, env=clean_env(), input=f"{BAD}\n{GOOD[0]}\n")
    assert (code, out) == (1, "") and err.startswith("TypeError: line 1: ")
    assert "(no record before it was committed; it and what follows were not written)" in err


def test_a_failing_batch_names_its_items_and_the_batches_before_it(store):
    text = "\n".join([*GOOD, BAD, '{"id":"d","p/n":"D"}']) + "\n"
    code, out, err = run_cli("add", "-", "--batch-size", "2", db=store, env=clean_env(), input=text)
    assert (code, out) == (1, "")
    assert err.startswith("TypeError: batch 2 (items 3-4): attribute 'p/n' requires text")
    assert "(the 1 batch before it (2 items) stays committed; it and what follows were not written)" in err


def test_the_library_names_the_line_too(store):
    from fgraph.bridges.add import ingest
    with fgraph.connect(str(store)) as db, pytest.raises(fgraph.FgraphError) as caught:
        ingest.add(db, "\n".join([*GOOD, BAD]))
    assert caught.value.name == "TypeError" and caught.value.message.startswith("line 4: ")
