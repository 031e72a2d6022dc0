"""The URLs of the NATS adapter and what they name — the servers (``options``: how the client
connects to them) and the stream (``check_stream``): ``nats://host:4222/STREAM``, or several seed servers of one
cluster, ``nats://a:4222,b:4223/STREAM`` (``tls://`` for TLS to every seed), issue 48 item 1.

A seed is ``host`` or ``host:port`` (4222 when the port is left out); a host is a name, an IPv4
address or an IPv6 address in brackets (``[::1]:4222``). The client connects to any seed that
answers and, once connected, reconnects to any of them (and to the servers the cluster announces).
Everything is checked here, before a name lookup, so a bad port or a stray character is a
``ValueTypeError`` naming what to write, never an error of the client library.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping

from fgraph.core.errors import Conflict, NotFound, ValueTypeError
from fgraph.bridges.sync.adapters.nats_tls import read_creds

SCHEMES = ("nats", "tls")
DEFAULT_PORT = 4222
MAX_SEEDS = 32
STREAM_NAME = re.compile(r"[A-Za-z0-9_-]{1,200}")
HOST_NAME = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,252})")
URL = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<servers>[^/?#]*)(?P<path>/[^?#]*)?(?P<rest>[?#].*)?",
                 re.DOTALL)
CONNECT_TIMEOUT = 2.0     # seconds to reach one server
RECONNECT_WAIT = 0.2      # seconds between two rounds of reconnection attempts
NO_JETSTREAM_FOR_ACCOUNT = 10039
FORM = "write nats://host:4222/STREAM, tls://host:4222/STREAM or, for a cluster, nats://a:4222,b:4222/STREAM"


def _bad(url: str, what: str, hint: str = FORM) -> ValueTypeError:
    return ValueTypeError(f"{url!r} is not a NATS URL: {what}", hint)


def _seed(url: str, text: str) -> tuple[str, int]:
    """One ``host[:port]`` of the URL → (host as the client writes it, port)."""
    if "@" in text:
        raise ValueTypeError("credentials in the URL would be visible to every user of the machine",
                             "set FGRAPH_NATS_CREDS, FGRAPH_NATS_USER/FGRAPH_NATS_PASSWORD or FGRAPH_NATS_TOKEN")
    if text.startswith("["):
        end = text.find("]")
        host, rest = text[1:end], text[end + 1:] if end > 0 else ""
        try:
            if end < 0 or ipaddress.ip_address(host).version != 6:
                raise ValueError(host)
        except ValueError:
            raise _bad(url, f"{text!r} is no IPv6 address in brackets", "write an IPv6 address as [::1]:4222") from None
        shown = f"[{host}]"
    else:
        host, _, port_text = text.partition(":")
        rest = f":{port_text}" if ":" in text else ""
        if ":" in port_text:
            raise _bad(url, f"{text!r} looks like an IPv6 address without brackets", "write it as [::1]:4222")
        if not HOST_NAME.fullmatch(host):
            raise _bad(url, f"{text!r} names no host" if text else "a server is missing (an empty seed)")
        shown = host
    if not rest:
        return shown, DEFAULT_PORT
    port_text = rest[1:] if rest.startswith(":") else None
    if port_text is None or not port_text.isascii() or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise _bad(url, f"the port of {text!r} is not a number from 1 to 65535",
                   "write the server's client port, as in nats://host:4222/STREAM")
    return shown, int(port_text)


def parse(url) -> tuple[str, list[str], str]:
    """``nats://a:4222,b:4223/STREAM`` → (scheme, ["nats://a:4222", "nats://b:4223"], "STREAM")."""
    text = str(url)
    found = URL.fullmatch(text)
    if found is None or found.group("scheme").lower() not in SCHEMES:
        raise ValueTypeError(f"{text!r} is not a NATS URL", FORM)
    if found.group("rest"):
        raise _bad(text, "it has a query or a fragment", FORM)
    scheme = found.group("scheme").lower()
    seeds = found.group("servers").split(",")
    if len(seeds) > MAX_SEEDS:
        raise _bad(text, f"it names {len(seeds)} servers, more than {MAX_SEEDS}", "name a few seeds of the cluster")
    servers = []
    for seed in seeds:
        host, port = _seed(text, seed.strip())
        server = f"{scheme}://{host}:{port}"
        if server not in servers:
            servers.append(server)
    stream = (found.group("path") or "").strip("/")
    if not STREAM_NAME.fullmatch(stream):
        raise ValueTypeError(f"{text!r} names no valid stream",
                             "put the stream name after the servers: nats://host:4222/EVENTS")
    return scheme, servers, stream


def display(servers: list[str]) -> str:
    """The servers as one URL for messages: ``nats://a:4222,b:4223``."""
    scheme = servers[0].split("://", 1)[0]
    return f"{scheme}://" + ",".join(server.split("://", 1)[1] for server in servers)


def split(server: str) -> list[str]:
    """``display``'s inverse: ``nats://a:4222,b:4223`` → each seed's URL."""
    scheme, _, seeds = server.partition("://")
    return [f"{scheme}://{seed}" for seed in seeds.split(",")]


def options(servers: list[str], login: Mapping[str, str], tls) -> dict:
    """nats-py's ``connect`` options: every seed, each tried once at the start (the caller rides out
    what comes after: ``max_reconnect_attempts`` -1 once connected), the credentials of ``login``
    (a creds file read and checked here, handed over as text) and the ``tls`` context."""
    out = {"servers": servers, "connect_timeout": CONNECT_TIMEOUT, "allow_reconnect": True,
           "max_reconnect_attempts": 1, "reconnect_time_wait": RECONNECT_WAIT, "name": "fgraph sync"}
    if login.get("creds"):
        from nats.aio.client import RawCredentials   # the text: nats-py opens no file itself
        out["user_credentials"] = RawCredentials(read_creds(login["creds"]))
    if login.get("user"):
        out["user"], out["password"] = login["user"], login.get("password") or ""
    if login.get("token"):
        out["token"] = login["token"]
    if tls is not None:
        out["tls"] = tls
    return out


async def check_stream(nats, nc, js, stream: str, server: str, create: bool, replicas: int, max_age: float) -> None:
    """The stream exists (made with ``create``) and is fgraph's: its subjects are ``STREAM.>``. A
    server that announces no JetStream is an error at once; a cluster without a leader (a timeout,
    a 503) raises the client's error, an outage the caller waits out (``nats_errors``)."""
    if not (getattr(nc, "_server_info", None) or {}).get("jetstream", True):
        raise NotFound(f"NATS server {server} has no JetStream", "start it with -js (or jetstream {} in its configuration)")
    try:
        info = await js.stream_info(stream)
    except nats.js.errors.NotFoundError:
        if not create:
            raise NotFound(f"stream {stream!r} does not exist on {server}", "pass --create-stream to make it") from None
        info = await js.add_stream(name=stream, subjects=[f"{stream}.>"], num_replicas=replicas,
                                   max_age=max_age or None, storage=nats.js.api.StorageType.FILE)
    except nats.js.errors.APIError as exc:
        if exc.err_code == NO_JETSTREAM_FOR_ACCOUNT:
            raise NotFound(f"NATS server {server} has no JetStream ({exc.description})",
                           "enable JetStream for the account (jetstream in its configuration)") from None
        raise
    subjects = list(getattr(info.config, "subjects", None) or [])
    if f"{stream}.>" not in subjects:
        raise Conflict(f"stream {stream!r} on {server} is not fgraph's: its subjects are "
                       f"{', '.join(subjects) or 'none'}, not {stream}.>",
                       "name another stream in the URL (--create-stream makes one for fgraph); fgraph never "
                       "publishes into another application's stream")
