"""Many processes at once: 4 writers, a live follower and a reader on one file, and processes racing to
create a missing file. No acknowledged write may be lost, no busy or locked error may reach a user,
and the follower must see every event exactly once, in order."""

from __future__ import annotations

import json
import multiprocessing
import subprocess
import threading
from collections import Counter

import fgraph
from tests.support.torture import FGRAPH, cli, content, report, size, wait_for

WRITERS = 4


def _writer(path: str, number: int, writes: int, results) -> None:
    acknowledged, failures = [], []
    with fgraph.connect(path) as db:
        for i in range(writes):
            try:
                receipt = db.transact({"id": f"w{number}-{i}", "t/n": i, "t/by": number})
                acknowledged.append(receipt["tx"])
            except fgraph.FgraphError as exc:
                failures.append(f"{exc.name}: {exc}")
    results.put((number, acknowledged, failures))


def _reader(path: str, stop, results) -> None:
    reads, failures = 0, []
    while not stop.is_set():
        try:
            with fgraph.connect(path, read_only=True) as db:
                db.q({"find": [["count", "?e"]], "where": [["?e", "t/n", "?n"]]})
                reads += 1
        except fgraph.FgraphError as exc:
            failures.append(f"{exc.name}: {exc}")
    results.put(("reader", reads, failures))


def test_writers_follower_and_reader_together(tmp_path):
    path = str(tmp_path / "busy.db")
    assert cli("--db", path, "add", '{"id":"seed","t/n":0}')[0] == 0
    context = multiprocessing.get_context("fork")
    results, stop = context.Queue(), context.Event()
    follower = subprocess.Popen([FGRAPH, "--db", path, "tail", "--follow", "--since", "64"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen: list[str] = []
    pump = threading.Thread(target=lambda: seen.extend(iter(follower.stdout.readline, "")), daemon=True)
    pump.start()
    writes = size(20, 400)
    workers = [context.Process(target=_writer, args=(path, n, writes, results)) for n in range(WRITERS)]
    reader = context.Process(target=_reader, args=(path, stop, results))
    reader.start()
    for worker in workers:
        worker.start()
    outcomes = [results.get(timeout=600) for _ in workers]
    stop.set()
    reader_outcome = results.get(timeout=60)
    for process in (*workers, reader):
        process.join(60)
    acknowledged = [tx for _, txs, _ in outcomes for tx in txs]
    failures = [f for _, _, fs in outcomes for f in fs] + reader_outcome[2]
    total = WRITERS * writes + 1
    code, out, _ = cli("--db", path, "tail", "--since", "64")
    stream = out.splitlines()
    assert wait_for(lambda: len(seen) >= total, timeout=60), (len(seen), total)
    follower.terminate()
    follower.wait(10)
    pump.join(10)
    follower.stdout.close()
    follower.stderr.close()
    counts = Counter(writes=len(acknowledged), failures=len(failures), reads=reader_outcome[1])
    counts["lost"] = total - 1 - len(acknowledged) + sum(1 for tx in acknowledged if tx is None)
    facts = content(path, attributes=("t/n",))[1]
    counts["lost"] += len(acknowledged) + 1 - len(facts)
    counts["follower_mismatch"] = int([line.rstrip("\n") for line in seen] != stream)
    report("concurrency", counts, writers=WRITERS)
    assert failures == []
    assert counts["lost"] == 0 and len(set(acknowledged)) == len(acknowledged)
    assert len(stream) == total
    assert counts["follower_mismatch"] == 0


def _create(path: str, barrier, number: int, results) -> None:
    barrier.wait()
    try:
        code, out, err = cli("--db", path, "add", json.dumps({"id": f"p{number}", "t/n": number}))
        results.put("ok" if code == 0 else err)
    except Exception as exc:  # a hang or a crash is a lost write too
        results.put(repr(exc))


def test_processes_racing_to_create_a_missing_file(tmp_path):
    context = multiprocessing.get_context("fork")
    counts = Counter()
    for round_number in range(size(2, 40)):
        path = str(tmp_path / f"race{round_number}.db")
        barrier, results = context.Barrier(6), context.Queue()
        workers = [context.Process(target=_create, args=(path, barrier, n, results)) for n in range(6)]
        for worker in workers:
            worker.start()
        outcomes = [results.get(timeout=120) for _ in workers]
        for worker in workers:
            worker.join(60)
        counts["writes"] += len(outcomes)
        counts["failures"] += sum(outcome != "ok" for outcome in outcomes)
        assert [o for o in outcomes if o != "ok"] == [], outcomes
        counts["lost"] += 6 - len(content(path, attributes=("t/n",))[1])
    report("creation-race", counts, processes=6)
    assert counts["lost"] == 0 and counts["failures"] == 0
