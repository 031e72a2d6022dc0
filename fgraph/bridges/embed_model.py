"""A static embedding model in process (the extra ``fgraph[embed]``, decision S2 in
docs/search.md): ``model2vec`` (numpy, safetensors, tokenizers; no torch) loads a named model
from the Hugging Face hub once, into its cache, or a local folder, and embeds a text by
averaging its tokens' vectors, so ``recall`` can be hybrid without an embedding service.

Two ways in, both named where an ``--embed-cmd`` goes:

- ``model2vec:NAME_OR_FOLDER`` (``--embed-cmd``, ``FGRAPH_EMBED_CMD``): the model is loaded in
  this process, once per model, and every text is embedded in process;
- ``python -m fgraph.bridges.embed_model NAME_OR_FOLDER`` is an ``--embed-cmd`` of its own (text on
  stdin, one JSON array on stdout), for the published runtime or any other program.
"""

from __future__ import annotations

import json
import math
import sys
import threading

from fgraph.core.errors import Unsupported, ValueTypeError

PREFIX = "model2vec:"
MAX_TEXT = 1_048_576
HINT = "install the extra (pip install 'fgraph[embed]') or give --embed-cmd a program instead"
_models: dict = {}
_lock = threading.Lock()


def named(command: str) -> str | None:
    """The model a ``model2vec:NAME`` embedder names, or None for a program."""
    return command[len(PREFIX):] if command.startswith(PREFIX) else None


def load(name: str):
    """The model ``name`` (a local folder, or a hub name fetched into the Hugging Face cache the
    first time), loaded once per process."""
    if not name:
        raise ValueTypeError("model2vec: names no model", "write model2vec:minishlab/potion-base-8M or a folder")
    with _lock:
        if name not in _models:
            try:
                from model2vec import StaticModel
            except ImportError:
                raise Unsupported("model2vec is not installed", HINT) from None
            try:
                _models[name] = StaticModel.from_pretrained(name, force_download=False)
            except Exception as exc:  # the loader's own errors (missing folder, no network, bad files)
                raise ValueTypeError(f"the model {name!r} could not be loaded: {type(exc).__name__}: {exc}",
                                     "name a model2vec model on the hub or a folder saved by save_pretrained; "
                                     "a hub model is downloaded once, into the Hugging Face cache") from None
        return _models[name]


def embed(name: str, text: str) -> list:
    """The embedding of ``text`` as a list of floats."""
    vector = [float(x) for x in load(name).encode([text], use_multiprocessing=False)[0]]
    if not all(math.isfinite(x) for x in vector):
        raise ValueTypeError(f"the model {name!r} gave a vector that is not finite", "check the model's files")
    return vector  # all zeroes when no token of the text is known: recall then ranks by words alone


def main(argv: list[str]) -> int:
    """``python -m fgraph.bridges.embed_model MODEL``: an embedder by the ``--embed-cmd`` contract."""
    if len(argv) != 1:
        print("usage: python -m fgraph.bridges.embed_model MODEL_NAME_OR_FOLDER < text", file=sys.stderr)
        return 2
    text = sys.stdin.buffer.read(MAX_TEXT + 1)
    if len(text) > MAX_TEXT:
        print(f"the text is longer than {MAX_TEXT} bytes", file=sys.stderr)
        return 1
    try:
        vector = embed(argv[0], text.decode("utf-8", "replace"))
    except (Unsupported, ValueTypeError) as exc:
        print(f"{type(exc).__name__}: {exc.message}; {exc.hint}", file=sys.stderr)
        return 1
    print(json.dumps(vector))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
