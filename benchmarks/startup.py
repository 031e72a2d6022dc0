"""Start-up: how long a user waits before fgraph answers, against what the interpreter itself costs.

Each figure is the median wall time of whole processes, started in interleaved rounds so that
machine noise hits the yardstick and fgraph alike:

- CLI: ``fgraph --help``, ``fgraph --version``, ``fgraph info`` and ``fgraph get`` on a small store,
  against a bare interpreter importing apsw, orjson and click (target: within 1.5x);
- MCP: ``fgraph mcp`` answering ``initialize`` on a small store, against a bare interpreter
  importing the SDK's server module (target: within 1.3x).

Run it on an installed fgraph, as a user has it (an editable install adds its import hook to every
start): by default the user-install environment that ``tests/test_install.py`` builds and caches,
else ``.venv``::

    .venv/bin/python benchmarks/startup.py [--rounds 15] [--fgraph PATH/bin/fgraph]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLI_YARDSTICK = "import apsw, orjson, click"
MCP_YARDSTICK = "import mcp.server.mcpserver, mcp.server.stdio"
INITIALIZE = (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
              b'"capabilities":{},"clientInfo":{"name":"startup","version":"1"}}}\n')


def default_fgraph() -> Path:
    installed = sorted((ROOT / "build" / "user-install").glob("wheel-*/bin/fgraph"), key=os.path.getmtime)
    return installed[-1] if installed else ROOT / ".venv" / "bin" / "fgraph"


def clean_env() -> dict:
    """The caller's environment without FGRAPH_* settings, and with bytecode caching on: an
    install compiles its modules, and a sandbox's PYTHONDONTWRITEBYTECODE would otherwise have a
    source tree recompiled on every start."""
    return {k: v for k, v in os.environ.items() if not k.startswith("FGRAPH_") and k != "PYTHONDONTWRITEBYTECODE"}


def timed(argv: list[str], env: dict) -> float:
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=True)
    return time.perf_counter() - start


def timed_initialize(fgraph: Path, store: Path, env: dict) -> float:
    """From the process's start to the first byte of its ``initialize`` answer on stdout."""
    start = time.perf_counter()
    server = subprocess.Popen([str(fgraph), "--db", str(store), "mcp"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    server.stdin.write(INITIALIZE)
    server.stdin.flush()
    answer = server.stdout.readline()
    elapsed = time.perf_counter() - start
    server.stdin.close()
    server.wait(timeout=30)
    if b'"serverInfo"' not in answer:
        raise SystemExit(f"fgraph mcp did not answer initialize: {answer[:200]!r}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--fgraph", type=Path, default=None, help="the fgraph executable to measure")
    args = parser.parse_args()
    fgraph = (args.fgraph or default_fgraph()).resolve()
    python = fgraph.parent / "python"
    env = clean_env()
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "small.fgraph"
        subprocess.run([str(fgraph), "--db", str(store), "add",
                        '[{"id":"ada","person/name":"Ada Lovelace","person/born":1815},'
                        '{"id":"grace","person/name":"Grace Hopper","person/knows":{"ref":"ada"}}]'],
                       stdout=subprocess.DEVNULL, env=env, check=True)
        commands = {
            "yardstick: python -c '" + CLI_YARDSTICK + "'": lambda: timed([str(python), "-c", CLI_YARDSTICK], env),
            "fgraph --help": lambda: timed([str(fgraph), "--help"], env),
            "fgraph --version": lambda: timed([str(fgraph), "--version"], env),
            "fgraph info": lambda: timed([str(fgraph), "--db", str(store), "info"], env),
            "fgraph get ada": lambda: timed([str(fgraph), "--db", str(store), "get", "ada"], env),
            "yardstick: python -c '" + MCP_YARDSTICK + "'": lambda: timed([str(python), "-c", MCP_YARDSTICK], env),
            "fgraph mcp: initialize answered": lambda: timed_initialize(fgraph, store, env),
        }
        for run in commands.values():  # warm the page cache and any bytecode caches first
            run()
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.rounds):
            for name, run in commands.items():
                times[name].append(run())
    median = {name: statistics.median(values) for name, values in times.items()}
    cli_base, mcp_base = (median[name] for name in commands if name.startswith("yardstick"))
    print(f"fgraph: {fgraph}  ({args.rounds} interleaved rounds, median wall time)")
    for name in commands:
        if name.startswith("yardstick"):
            print(f"  {name:<62} {median[name] * 1000:7.1f} ms")
            continue
        base, target = (mcp_base, 1.3) if "mcp" in name else (cli_base, 1.5)
        ratio = median[name] / base
        verdict = "meets" if ratio <= target else "misses"
        print(f"  {name:<62} {median[name] * 1000:7.1f} ms  {ratio:4.2f}x  ({verdict} {target}x)")


if __name__ == "__main__":
    sys.exit(main())
