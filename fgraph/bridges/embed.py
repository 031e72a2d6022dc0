"""``fgraph search --embed-cmd`` (spec 13 §10): turn the search text into the query vector by
running the operator's embedder, with a contract strict enough to fail clearly.

The command is a JSON argv array (``'["python3", "embed.py"]'``) or one executable path
(never split, never a shell), or ``model2vec:NAME_OR_FOLDER``: a static model embedding in this
process (``embed_model``, decision S2 in docs/search.md). ``FGRAPH_EMBED_CMD`` gives the command
when no ``--embed-cmd`` does (MCP, and a search naming ``--vector-attribute``). It gets the text on stdin as UTF-8, without a newline, and must
print one JSON array of finite numbers (at most 1 MiB) and exit 0 within 60 s. Its stderr is
not shown. Every failure is a ``TypeError`` that says what the embedder did wrong.
"""

from __future__ import annotations

import math
import os
import selectors
import subprocess
import threading
import time

from fgraph.bridges import embed_model
from fgraph.core import settings
from fgraph.core.canonical import loads
from fgraph.core.errors import FgraphError, ValueTypeError

MAX_OUTPUT = 1_048_576
HINT = "the embedder must read the text on stdin and print one JSON array of numbers, then exit 0"


def search_options(*, text, vector, embed_cmd, **rest) -> dict:
    """The keyword arguments of ``Db.search``; ``vector`` comes from the embedder when there is
    a non-blank text, no explicit vector and an ``embed_cmd``."""
    if embed_cmd is None and rest.get("vector_attribute") is not None:
        embed_cmd = configured()  # FGRAPH_EMBED_CMD: only where the search names the vectors to compare
    if embed_cmd is not None and vector is None and text is not None and text.strip():
        vector = embed(embed_cmd, text)
    return dict(rest, text=text, vector=vector)


def configured() -> str | None:
    """The embedder FGRAPH_EMBED_CMD names (an ``--embed-cmd`` value), or None."""
    return settings.read(settings.EMBED_CMD) or None


def command_argv(command: str) -> list:
    if command.lstrip().startswith("["):
        try:
            argv = loads(command)
        except FgraphError as exc:
            raise ValueTypeError(f"--embed-cmd is not a valid JSON argv array: {exc.message}",
                                 'write it as \'["program", "arg", ...]\'') from None
        if type(argv) is not list or not argv or not all(type(a) is str and a for a in argv):
            raise ValueTypeError("--embed-cmd must be a non-empty JSON array of non-empty strings",
                                 'write it as \'["program", "arg", ...]\'')
        return argv
    if not command:
        raise ValueTypeError("--embed-cmd is empty", "name the embedder executable or give a JSON argv array")
    return [command]


def embed(command: str, text: str) -> list:
    model = embed_model.named(command)
    if model is not None:  # model2vec:NAME, in process (the extra fgraph[embed])
        return embed_model.embed(model, text)
    argv = command_argv(command)
    try:
        process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL)
    except (OSError, ValueError) as exc:
        raise ValueTypeError(f"the embedder {argv[0]!r} could not start: {exc}",
                             "check the path, its execute permission, or give a JSON argv array") from None
    try:
        output = _exchange(process, text.encode("utf-8", "surrogatepass"), settings.embed_timeout())
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
    if process.returncode != 0:
        raise ValueTypeError(f"the embedder exited with status {process.returncode}", HINT)
    return _vector(output)


def _exchange(process: subprocess.Popen, data: bytes, timeout: float) -> bytes:
    """Feed stdin from a thread (a child may print before it reads), read at most 1 MiB + 1."""
    def feed():
        try:
            process.stdin.write(data)
        except OSError:  # the embedder closed stdin early: its output decides
            pass
        finally:
            try:
                process.stdin.close()
            except OSError:
                pass

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    deadline = time.monotonic() + timeout
    chunks, size = [], 0
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not selector.select(left):
                raise ValueTypeError(f"the embedder did not finish within {timeout:g} s", HINT)
            chunk = os.read(process.stdout.fileno(), 65536)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_OUTPUT:
                raise ValueTypeError(f"the embedder printed more than {MAX_OUTPUT} bytes", HINT)
    process.stdout.close()
    try:
        process.wait(max(deadline - time.monotonic(), 0.001))
    except subprocess.TimeoutExpired:
        raise ValueTypeError(f"the embedder did not exit within {timeout:g} s", HINT) from None
    writer.join(1)
    return b"".join(chunks)


def _vector(output: bytes) -> list:
    try:
        vector = loads(output)
    except FgraphError as exc:
        raise ValueTypeError(f"the embedder's output is not one JSON array: {exc.message}", HINT) from None
    if type(vector) is not list or not vector:
        raise ValueTypeError("the embedder's output is not a non-empty JSON array", HINT)
    for x in vector:
        if type(x) not in (int, float) or (type(x) is float and not math.isfinite(x)):
            raise ValueTypeError(f"the embedder's array holds {x!r}, not a finite number", HINT)
    return vector
