"""How the NATS adapter keeps credentials out of plain text and makes ``tls://`` mean TLS
(issue 47 item 2, docs/replication.md "TLS and credentials").

A NATS server announces itself in an ``INFO`` line sent in clear, and nats-py upgrades to TLS only
when that line says ``tls_required``: against a server without TLS, or a man in the middle that
drops the flag, it would go on in clear and send its ``CONNECT`` — user and password, token, creds
signature — to anyone on the path. ``guarded_client`` checks the connection where nats-py builds
``CONNECT``, after the ``INFO`` and any upgrade and before a byte of it is written, at the first
connection and every reconnection; ``check_plaintext`` refuses, before any name lookup, credentials
for a plain ``nats://`` URL of another machine unless the user passed
``--insecure-plaintext-credentials``.
"""

from __future__ import annotations

import ipaddress
import ssl
import urllib.parse
from collections.abc import Mapping

from fgraph.core.errors import Unsupported

INSECURE_HINT = ("use a tls:// URL to a server that offers TLS, or, only on a network path you trust, "
                 "pass --insecure-plaintext-credentials")
NO_TLS_HINT = ("nothing was sent to it: check that the server runs with TLS (tls {} in its configuration) and that "
               "nothing between rewrites what it announces; a tls:// URL never falls back to plain text")


def is_loopback(host: str) -> bool:
    """True when ``host`` is this machine without asking DNS: ``localhost`` or a loopback address
    literal (127.0.0.0/8, ::1, an IPv4-mapped loopback). Any other name may resolve anywhere."""
    host = host.strip("[]").rstrip(".").lower()
    if host == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return (mapped or address).is_loopback


def has_credentials(login: Mapping[str, str]) -> bool:
    return any(login.get(key) for key in ("creds", "user", "password", "token"))


def refusal(scheme: str, host: str, *, tls: bool, credentials: bool, insecure: bool) -> str | None:
    """Why the CONNECT line (which carries the credentials) must not go to this server now, None
    when it may: a ``tls://`` server without a verified TLS session, or credentials that would
    travel in clear to another machine without the user's ``--insecure-plaintext-credentials``."""
    if scheme == "tls" and not tls:
        return "the server did not complete a verified TLS handshake"
    if credentials and not tls and not insecure and not is_loopback(host):
        return f"the credentials would travel in clear to {host}"
    return None


def check_plaintext(server: str, login: Mapping[str, str], insecure: bool) -> None:
    """Refuse, before any name lookup or connection, credentials for a ``nats://`` URL of another machine."""
    parts = urllib.parse.urlsplit(server)
    if parts.scheme == "nats" and has_credentials(login) and not insecure and not is_loopback(parts.hostname or ""):
        raise Unsupported(f"credentials would travel in clear to {server} (a nats:// URL is plain text)", INSECURE_HINT)


def verified_tls(transport) -> bool:
    """True when nats-py's transport carries a TLS session whose peer certificate was verified.
    Fails closed: a transport that does not say (another nats-py layout) counts as plain text."""
    writer = getattr(transport, "_io_writer", None)
    extra = getattr(writer, "get_extra_info", None)
    session = extra("ssl_object") if callable(extra) else None
    if not isinstance(session, (ssl.SSLObject, ssl.SSLSocket)):
        return False
    return session.context.verify_mode == ssl.CERT_REQUIRED and bool(session.getpeercert())


def guarded_client(nats, *, credentials: bool, insecure: bool):
    """nats-py's client with one check added where it builds CONNECT — after the server's INFO and
    any TLS upgrade, before a byte of CONNECT (credentials, signature) is written, at the first
    connection and at every reconnection alike. A refusal is a ``nats.errors.Error``, so the client
    drops that server and tries again; ``Refused`` lets ``NatsLog`` tell it from other failures."""
    class Refused(nats.errors.Error):
        """The guard's refusal of one server, with its reason."""

        def __init__(self, reason: str):
            super().__init__(reason)
            self.reason = reason

        def __str__(self) -> str:
            return self.reason

    class GuardedClient(nats.aio.client.Client):
        """nats-py's client, refusing to write CONNECT where ``refusal`` says it must not go."""

        def _connect_command(self) -> bytes:
            uri = self._current_server.uri
            reason = refusal(uri.scheme, uri.hostname or "", tls=verified_tls(self._transport),
                             credentials=credentials, insecure=insecure)
            if reason is not None:
                raise Refused(reason)
            return super()._connect_command()

    return GuardedClient, Refused
