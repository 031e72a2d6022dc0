"""The message-log engines of ``fgraph sync``, found by URL scheme: a module and a ``DECLARED``
line each (issue 46; docs/replication.md "Adding a log adapter").

An engine's module implements ``fgraph.bridges.sync.log.Log`` and offers ``open_log(url,
**options)`` (a handle that is also a context manager) and ``SETTINGS`` (the
``core.settings.Setting`` rows of the environment variables it reads; docs/settings.md shows them
after core's). Its line here says which URL schemes it serves, what to import, how its URLs look,
which ``sync`` options it reads (with their defaults) and which factory of
``tests/support/logs.py`` gives the contract test a fresh log of it. The module is imported only
when a URL of its scheme is used, so an engine's client (nats-py) loads for that engine alone;
nothing above this package names an engine.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from fgraph.core.errors import ValueTypeError

COMMON_OPTIONS = ("batch_size", "follow", "interval", "retry", "stop")   # publish's and consume's own
PUBLISH_OPTIONS = ("signing_key",)           # publish's alone: the key that seals (docs/forgetting.md T1)
CONSUME_OPTIONS = ("trust", "accept_keys")   # consume's alone: what the receiver trusts (T2)
URL = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")


@dataclass(frozen=True)
class Adapter:
    """One log engine as ``fgraph sync`` sees it before importing it."""

    name: str
    schemes: tuple[str, ...]
    module: str                    # imported on first use
    url_form: str                  # how its URL looks, for help and hints
    summary: str                   # one line for help
    options: Mapping[str, object] = field(default_factory=dict)   # sync options it reads → their defaults
    test_factory: str | None = None   # the function of tests/support/logs.py that opens a fresh log of it

    def load(self):
        return importlib.import_module(self.module)

    @property
    def settings(self) -> tuple:
        """The ``Setting`` rows of the environment variables it reads (imports the module)."""
        return tuple(self.load().SETTINGS)

    def open(self, url: str, **options):
        """A handle on the log ``url`` names, ``options`` being the ones this adapter reads (the
        declared defaults fill in the rest)."""
        return self.load().open_log(str(url), **{**self.options, **options})


DECLARED = (
    Adapter("nats", ("nats", "tls"), f"{__name__}.nats", "nats://host:4222/STREAM",
            "a NATS JetStream stream, tls:// for TLS; needs the extra fgraph[nats]",
            options={"create_stream": False, "replicas": 1, "max_age": 0.0, "ack_wait": 30.0,
                     "insecure_plaintext_credentials": False}, test_factory="nats_log"),
    Adapter("memory", ("memory",), f"{__name__}.memory", "memory://NAME",
            "a log in this process's memory, for tests and as the template of a new adapter",
            options={"create_stream": False, "ack_wait": 30.0}, test_factory="memory_log"),
)
ADAPTERS = {scheme: adapter for adapter in DECLARED for scheme in adapter.schemes}


def url_forms(option: str | None = None) -> str:
    """The URL prefixes of every adapter (of those reading ``option``): "nats://, tls://, memory://"."""
    return ", ".join(f"{scheme}://" for a in DECLARED if option is None or option in a.options for scheme in a.schemes)


def adapter_for(url) -> Adapter | None:
    """The adapter of a log URL; None for a plain path; ``TypeError`` for a URL no adapter serves."""
    found = URL.match(str(url))
    if found is None:
        return None
    adapter = ADAPTERS.get(found.group(1).lower())
    if adapter is None:
        raise ValueTypeError(f"{str(url)!r} names no log fgraph can sync through",
                             f"give a store path, or a URL of one of: {url_forms()}")
    return adapter


def is_log_url(text) -> bool:
    return adapter_for(text) is not None


def settings() -> tuple:
    """Every adapter's ``Setting`` rows, in registry order (docs/settings.md shows them after core's)."""
    return tuple(row for adapter in DECLARED for row in adapter.settings)


def open_log(url: str, **options):
    adapter = adapter_for(url)
    if adapter is None:
        raise ValueTypeError(f"{str(url)!r} is not a log URL", f"give a URL of one of: {url_forms()}")
    given = {key: value for key, value in options.items() if value is not None}
    foreign = sorted(given.keys() - adapter.options.keys())
    if foreign:
        raise ValueTypeError(f"--{foreign[0].replace('_', '-')} does not apply to a {adapter.url_form} log",
                             f"drop it; it applies to {url_forms(foreign[0]) or 'no log'}")
    return adapter.open(url, **given)


def sync(sources, target, **options) -> dict:
    """``fgraph sync`` where one side is a log URL: stores → log (``target`` a URL) or log →
    store (the one source a URL). ``options`` are publish's and consume's (batch size, follow,
    interval, retry, stop), publish's ``signing_key``, consume's ``trust`` and ``accept_keys``, and
    the adapter's own (None: its default)."""
    from fgraph.bridges.sync import log as sync_log   # the log side loads only when a URL is given
    sources, target = [str(s) for s in sources], str(target)
    common = {key: value for key, value in options.items() if key in COMMON_OPTIONS}
    publishing = {key: value for key, value in options.items() if key in PUBLISH_OPTIONS and value is not None}
    consuming = {key: value for key, value in options.items() if key in CONSUME_OPTIONS and value}
    own = {key: value for key, value in options.items()
           if key not in COMMON_OPTIONS + PUBLISH_OPTIONS + CONSUME_OPTIONS}
    from_logs = [s for s in sources if is_log_url(s)]
    if is_log_url(target):
        if from_logs:
            raise ValueTypeError("a log cannot be synced into a log", "--from a URL needs --to a store file")
        if consuming:
            raise ValueTypeError(f"--{next(iter(consuming)).replace('_', '-')} applies to a receiving store",
                                 "drop it when publishing; a receiver names what it trusts")
        with open_log(target, **own) as log:
            return sync_log.publish(sources, log, **common, **publishing)
    if len(sources) != 1 or not from_logs:
        raise ValueTypeError("a log is read alone, into one store", f"pass one --from URL ({url_forms()}) per run")
    if publishing:
        raise ValueTypeError("--signing-key applies to a publishing store", "drop it when consuming from a log")
    with open_log(sources[0], **own) as log:
        return sync_log.consume(log, target, **common, **consuming)
