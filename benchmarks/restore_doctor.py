"""Restore, backup and doctor against their yardsticks (issue 34 items 2 and 3), on one store.

The same four measurements as ``machine.py`` (each command in its own process, ``run_measured``;
the integrity check as ``integrity_seconds``), without rebuilding the store or measuring apply,
so two versions can be compared on the same file back to back:

  restore  `fgraph restore` of the store's snapshot   vs  `fgraph snapshot` of the store
  backup   `fgraph backup`                            vs  `PRAGMA integrity_check`
  doctor   `fgraph doctor`                            vs  `PRAGMA integrity_check`

    .venv/bin/python benchmarks/restore_doctor.py STORE          # an existing store
    .venv/bin/python benchmarks/restore_doctor.py --events 100000 # build one first (build_store)

Put another checkout's package first on ``PYTHONPATH`` to measure that version instead.
"""

from __future__ import annotations

import argparse
import os
import tempfile

from common import build_store, fgraph_executable, run_measured
from machine import checkpoint, integrity_seconds, verdict


def measure(source: str, tmp: str, exe: str) -> None:
    snap = os.path.join(tmp, "snap.ndjson")
    snapshot = run_measured([exe, "--db", source, "snapshot"], stdout=snap)
    restore = run_measured([exe, "--db", os.path.join(tmp, "restored.db"), "restore", snap])
    ratio = snapshot["seconds"] / restore["seconds"]
    print(f"restore {restore['seconds']:6.2f} s peak {restore['peak_rss_mib']:4.0f} MiB | snapshot "
          f"{snapshot['seconds']:5.2f} s | ratio {ratio:4.2f}  {verdict('restore', ratio)}")
    integrity = min(integrity_seconds(source) for _ in range(2))
    backup = run_measured([exe, "--db", source, "backup", os.path.join(tmp, "backup.db")])
    doctor = run_measured([exe, "--db", source, "doctor"])
    print(f"integrity_check {integrity:5.2f} s | backup {backup['seconds']:5.2f} s "
          f"{backup['seconds'] / integrity:4.2f}x  {verdict('backup', backup['seconds'] / integrity)} | doctor "
          f"{doctor['seconds']:5.2f} s {doctor['seconds'] / integrity:4.2f}x  "
          f"{verdict('doctor', doctor['seconds'] / integrity)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", nargs="?", help="an existing store (default: build one)")
    parser.add_argument("--events", type=int, default=100_000, help="events of the store to build")
    args = parser.parse_args()
    exe = fgraph_executable()
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
        source = args.store
        if source is None:
            source = os.path.join(tmp, "source.db")
            build_store(source, args.events)
            checkpoint(source)
        measure(source, tmp, exe)


if __name__ == "__main__":
    main()
