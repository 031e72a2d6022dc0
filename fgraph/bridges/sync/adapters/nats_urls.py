"""The URLs of the NATS adapter: ``nats://host:4222/STREAM``, or several seed servers of one
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

from fgraph.core.errors import ValueTypeError

SCHEMES = ("nats", "tls")
DEFAULT_PORT = 4222
MAX_SEEDS = 32
STREAM_NAME = re.compile(r"[A-Za-z0-9_-]{1,200}")
HOST_NAME = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,252})")
URL = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<servers>[^/?#]*)(?P<path>/[^?#]*)?(?P<rest>[?#].*)?",
                 re.DOTALL)
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
    scheme, _, rest = server.partition("://")
    return [f"{scheme}://{seed}" for seed in rest.split(",")]
