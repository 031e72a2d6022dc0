"""A fork server for one runtime's CLI, so cross-runtime tests can send thousands of
commands without paying an interpreter start-up per command.

Run with the runtime's own interpreter: ``python cliserver.py SCRIPT``, where SCRIPT is
the runtime's console script (for example ``.venv/bin/fgraph``). The server imports
what the script's entry point needs once, then serves requests: one JSON line on stdin
(``{"args": [...], "stdin": "<base64>", "env": {...}}``), one JSON line back
(``{"rc": int, "stdout": "<base64>", "stderr": "<base64>"}``). Each request runs in a
forked child with real file descriptors and a real exit status, exactly as the
console script would run; nothing one command leaves in memory reaches the next.

It uses only the standard library and treats the runtime as a black box: it never
reads the script, only runs it.
"""

from __future__ import annotations

import base64
import importlib.metadata
import json
import os
import runpy
import sys
import tempfile


STREAMS = [(stream.encoding, stream.errors) for stream in (sys.__stdin__, sys.__stdout__, sys.__stderr__)]


def warm_up(script: str) -> None:
    """Import the entry point named like the script, so forked children start warm."""
    name = os.path.basename(script)
    for entry in importlib.metadata.entry_points(group="console_scripts"):
        if entry.name == name:
            try:
                entry.load()
            except Exception:  # a failed warm-up only costs speed; the child reports the real error
                pass
            return


def run_one(script: str, request: dict) -> dict:
    with tempfile.TemporaryFile() as stdin, tempfile.TemporaryFile() as stdout, \
            tempfile.TemporaryFile() as stderr:
        stdin.write(base64.b64decode(request.get("stdin") or ""))
        stdin.seek(0)
        pid = os.fork()
        if pid == 0:  # child: become the console script
            try:
                os.dup2(stdin.fileno(), 0)
                os.dup2(stdout.fileno(), 1)
                os.dup2(stderr.fileno(), 2)
                for key, value in (request.get("env") or {}).items():
                    if value is None:
                        os.environ.pop(key, None)
                    else:
                        os.environ[key] = value
                if request.get("cwd"):
                    os.chdir(request["cwd"])
                # the same encodings and error handlers a fresh interpreter would give its
                # standard streams here (under a C locale, stdin decodes with surrogateescape; no newline translation)
                sys.stdin = open(0, "r", encoding=STREAMS[0][0], errors=STREAMS[0][1], newline="\n", closefd=False)
                sys.stdout = open(1, "w", encoding=STREAMS[1][0], errors=STREAMS[1][1], newline="\n", closefd=False)
                sys.stderr = open(2, "w", encoding=STREAMS[2][0], errors=STREAMS[2][1], newline="\n", closefd=False)
                sys.argv = [script, *request["args"]]
                code = 0
                try:
                    runpy.run_path(script, run_name="__main__")
                except SystemExit as exc:
                    code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
                    if exc.code is not None and not isinstance(exc.code, int):
                        print(exc.code, file=sys.stderr)
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
            except BaseException:  # pragma: no cover - the server must never run on in a child
                import traceback
                traceback.print_exc()
                sys.stderr.flush()
                os._exit(120)
        _, status = os.waitpid(pid, 0)
        rc = os.waitstatus_to_exitcode(status)
        stdout.seek(0)
        stderr.seek(0)
        return {"rc": rc, "stdout": base64.b64encode(stdout.read()).decode(),
                "stderr": base64.b64encode(stderr.read()).decode()}


def main() -> None:
    script = sys.argv[1]
    warm_up(script)
    out = sys.stdout
    print(json.dumps({"ready": True}), file=out, flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        print(json.dumps(run_one(script, json.loads(line))), file=out, flush=True)


if __name__ == "__main__":
    main()
