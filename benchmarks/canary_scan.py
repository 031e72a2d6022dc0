"""Canary scans of issue 33 (docs/forgetting.md): a → hub → edge over files and a → NATS → a late
consumer and an offline store, with the canary hits in every store's files and in the NATS server's
store directory before and after each step, then doctor on every store.

    .venv/bin/python benchmarks/canary_scan.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import fgraph  # noqa: E402
from fgraph.bridges.sync import files as file_sync  # noqa: E402
from tests.support.nats import NatsServer  # noqa: E402
from tests.support import canaries  # noqa: E402

FGRAPH = str(Path(sys.executable).with_name("fgraph"))
STORES = ("a", "hub", "edge", "late", "offline")


def scan(tmp: Path, label: str) -> None:
    row = []
    for name in STORES:
        hits = canaries.canary_hits(tmp, name + ".db")
        row.append(f"{name} {sum(hits.values())}/{len(canaries.store_files(tmp, name + '.db'))}")
    nats = sum(canaries.canary_hits(tmp / "nats").values())
    print(f"| {label} | " + " | ".join(row) + f" | {nats} |")


def main() -> None:
    tmp = Path(tempfile.mkdtemp())
    (tmp / "nats").mkdir()
    with fgraph.connect(tmp / "a.db") as db:
        canaries.write_history(db, 6)
    server = NatsServer(tmp / "nats").start()
    url = f"{server.url}/EV"

    def cli(*args):
        proc = subprocess.run([FGRAPH, *map(str, args)], cwd=tmp, capture_output=True)
        assert proc.returncode == 0, proc.stderr

    print("| step | " + " | ".join(f"{n} hits/files" for n in STORES) + " | NATS store hits |")
    print("|---" * (len(STORES) + 2) + "|")
    cli("sync", "--from", "a.db", "--to", url, "--create-stream")
    file_sync.sync([tmp / "a.db"], tmp / "hub.db")
    file_sync.sync([tmp / "hub.db"], tmp / "edge.db")
    with fgraph.connect(tmp / "edge.db") as db:
        db.transact([{"id": "ada", "note/own": canaries.SHORT + "-own"}])
    scan(tmp, "before the excision")
    with fgraph.connect(tmp / "a.db") as db:
        db.excise("ada", operation_id="forget-ada", if_basis_tx=db.latest_tx())
    scan(tmp, "excise on a")
    file_sync.sync([tmp / "a.db"], tmp / "hub.db")
    scan(tmp, "sync a → hub")
    file_sync.sync([tmp / "hub.db"], tmp / "edge.db")
    scan(tmp, "sync hub → edge")
    cli("sync", "--from", "a.db", "--to", url)
    server.stop()
    scan(tmp, "publish a → NATS")
    server.start()
    cli("sync", "--from", url, "--to", "late.db")
    file_sync.sync([tmp / "a.db"], tmp / "offline.db")
    server.stop()
    scan(tmp, "late consumer, offline store")
    for name in STORES:
        with fgraph.connect(tmp / f"{name}.db", read_only=True) as db:
            print(f"doctor {name}: ok={db.diagnose().ok}, files {canaries.store_files(tmp, name + '.db')}")


if __name__ == "__main__":
    main()
