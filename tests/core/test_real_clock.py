"""The default clock is the real one, in microseconds: transaction times fall between wall-clock
readings taken around the call, and stay strictly increasing when the clock goes backwards."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import fgraph

FGRAPH = os.path.join(os.path.dirname(sys.executable), "fgraph")


def _now_us() -> int:
    return time.time_ns() // 1000


def test_library_default_clock_is_wall_time_in_microseconds(tmp_path):
    with fgraph.connect(str(tmp_path / "c.db")) as db:
        for i in range(20):
            before = _now_us()
            report = db.transact({"id": f"e{i}", "t/n": i})
            after = _now_us()
            assert before <= report["at"] <= after, (before, report["at"], after)
        genesis = db.receipt(64)["at"]
    assert abs(genesis - _now_us()) < 60_000_000  # genesis was stamped by the same clock, not in ms or s


def test_cli_default_clock_is_wall_time_in_microseconds(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("FGRAPH_")}
    before = _now_us()
    proc = subprocess.run([FGRAPH, "--db", str(tmp_path / "c.db"), "--json", "add", '{"id":"a","t/n":1}'],
                          capture_output=True, text=True, env=env, timeout=60)
    after = _now_us()
    assert proc.returncode == 0, proc.stderr
    assert before <= json.loads(proc.stdout)["at"] <= after


def test_times_stay_increasing_when_the_clock_goes_backwards(tmp_path):
    readings = iter([2_000_000_000_000_000 - k * 1_000_000 for k in range(50)])
    with fgraph.connect(str(tmp_path / "b.db"), clock=lambda: next(readings)) as db:
        times = [db.transact({"id": f"e{i}", "t/n": i})["at"] for i in range(30)]
    # spec 03 §8: a reading not after the latest transaction time yields one second after it
    assert all(later == earlier + 1_000_000 for earlier, later in zip(times, times[1:])), times[:5]


def test_real_clock_readings_never_repeat_a_time(tmp_path):
    with fgraph.connect(str(tmp_path / "r.db")) as db:
        times = [db.transact({"id": f"e{i}", "t/n": i})["at"] for i in range(200)]
    assert times == sorted(set(times))
