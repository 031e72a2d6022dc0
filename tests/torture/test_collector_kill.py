"""kill -9 of a `tail --follow` collector at random moments while a writer commits local adds,
imports and applies (issue 49 item 1): restarted with `--cursor`, with `--after` (a script reading
the event of its file's last line) and with `--chain`, the collected file holds every event
exactly once, in order, byte-identical to `tail --since 64`, after every cycle; with `--chain`,
`verify-stream --chain` says it is intact after every cycle too.

A cycle: the collector is killed (as soon as it started, or at a random moment after it wrote a
line); what it left must be a prefix of the stream; it is restarted, the writer is paused
(SIGSTOP) while the collected file is awaited and compared, then resumed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest

from tests.support.collectors import expected, kill9, lines_of, source_stream, start
from tests.support.torture import FGRAPH, cli, report, rng, size, wait_for

MODES = ("cursor", "after", "chain")
RESULTS: Counter = Counter()

WRITER = r"""
import json, os, random, subprocess, sys, time
import fgraph
path, source, fgraph_exe, workdir, seed = sys.argv[1:6]
rnd = random.Random(seed)
stream = open(source).read().splitlines()
db = fgraph.connect(path)
local = applied = imported = 0
while True:
    pick = rnd.random()
    if pick < 0.6 or applied >= len(stream):
        db.transact({"id": f"w{local}", "w/n": local})
        local += 1
    elif pick < 0.85:
        chunk = stream[applied:applied + rnd.randint(1, 3)]
        db.apply("".join(line + "\n" for line in chunk))
        applied += len(chunk)
    else:
        log = os.path.join(workdir, f"import-{imported}.jsonl")
        with open(log, "w") as handle:
            for k in range(rnd.randint(1, 2)):
                handle.write(json.dumps({"id": f"d{imported}-{k}", "type": "decision",
                                         "content": {"what": f"decision {imported}.{k}"},
                                         "metadata": {"timestamp": "2025-01-0%dT10:00:00Z" % (1 + k)}}) + "\n")
        subprocess.run([fgraph_exe, "--db", path, "import", "jsonl-log", log], check=True, capture_output=True)
        imported += 1
    time.sleep(0.02)
"""

AFTER_SCRIPT = r"""
last=$(tail -n 1 "$OUT" | sed -n 's/.*"event":"\([0-9a-f-]*\)".*/\1/p')
if [ -n "$last" ]; then exec "$FGRAPH" --db "$DB" tail --follow --after "$last" >> "$OUT"
else exec "$FGRAPH" --db "$DB" tail --follow --since 64 >> "$OUT"; fi
"""


def _collector(mode: str, root) -> subprocess.Popen:
    db, out = root / "agent.db", root / f"{mode}.ndjson"
    if mode == "after":
        env = {**os.environ, "OUT": str(out), "DB": str(db), "FGRAPH": FGRAPH}
        return start(["-c", AFTER_SCRIPT], root / f"{mode}.script-out", env=env, executable="/bin/sh")
    position = ["--cursor", root / "c.cursor"] if mode == "cursor" else ["--chain", root / "c.chain"]
    return start(["--db", db, "tail", "--follow", "--since", "64", *position], out)


def _chain_intact(root, out) -> bool:
    code, text, _ = cli("verify-stream", str(out), "--chain", str(root / "c.chain"), "--json")
    return code == 0 and json.loads(text)["intact"]


@pytest.mark.parametrize("mode", MODES)
def test_collector_killed_at_random_moments_resumes_exactly(mode, tmp_path):
    rounds, chance = size(8, 50), rng(f"collector-kill:{mode}")
    db, out = tmp_path / "agent.db", tmp_path / f"{mode}.ndjson"
    assert cli("--db", str(db), "add", '{"id":"seed","w/n":-1}')[0] == 0
    (tmp_path / "source.ndjson").write_text(source_stream(tmp_path / "source.db", 400))
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(db), str(tmp_path / "source.ndjson"), FGRAPH,
                               str(tmp_path), f"{mode}"], start_new_session=True, stderr=subprocess.PIPE)
    counts = Counter({"lost": 0, "partial": 0, "tracebacks": 0, "hangs": 0, "doubled": 0, "cycles": 0})
    collector = _collector(mode, tmp_path)
    try:
        for _ in range(rounds):
            if chance.random() < 0.7:   # at a random moment once it is streaming; else as it starts
                seen = len(lines_of(out))
                if not wait_for(lambda: len(lines_of(out)) > seen, timeout=60):
                    counts["hangs"] += 1
                time.sleep(chance.uniform(0, 0.15))
            kill9(collector)
            left = out.read_bytes() if out.exists() else b""
            now = expected(db)
            assert now.startswith(left), f"{mode}: the file a killed collector left is not a prefix of the stream"
            counts["killed_mid_line"] += not left.endswith(b"\n") and left != b""
            collector = _collector(mode, tmp_path)
            os.killpg(writer.pid, signal.SIGSTOP)
            try:
                want = expected(db)
                if not wait_for(lambda: out.exists() and out.read_bytes() == want, timeout=60):
                    got = lines_of(out)
                    counts["doubled"] += len(got) - len(set(got))
                    counts["lost"] += len(set(want.splitlines(keepends=True)) - set(got))
                    pytest.fail(f"{mode}: the collected file is not `tail --since 64` after cycle "
                                f"{counts['cycles'] + 1}: {dict(counts)}")
                if mode == "chain":
                    assert wait_for(lambda: _chain_intact(tmp_path, out), timeout=60), "verify-stream --chain"
            finally:
                os.killpg(writer.pid, signal.SIGCONT)
            counts["cycles"] += 1
    finally:
        kill9(collector)
        kill9(writer)
        with writer.stderr:
            complaints = writer.stderr.read()
    errors = b"".join(path.read_bytes() for path in tmp_path.glob("*.err"))
    counts["tracebacks"] += errors.count(b"Traceback")
    assert counts["tracebacks"] == 0, errors[-2000:]
    assert writer.returncode == -signal.SIGKILL, complaints[-2000:]
    RESULTS.update({f"{mode}:{key}": value for key, value in counts.items()})
    RESULTS[f"{mode}:events"] = len(lines_of(out))
    figures = {f"{m}_cycles": RESULTS[f"{m}:cycles"] for m in MODES if f"{m}:cycles" in RESULTS}
    report("collector-kill", Counter({key: sum(v for k, v in RESULTS.items() if k.endswith(f":{key}"))
                                      for key in ("lost", "partial", "tracebacks", "hangs", "doubled",
                                                  "killed_mid_line", "events")}), **figures)
