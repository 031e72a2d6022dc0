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
import os
import re
import ssl
import urllib.parse
from collections.abc import Mapping

from fgraph.core import settings
from fgraph.core.errors import FormatError, NotFound, Unsupported
from fgraph.core.files import open_regular_input
from fgraph.core.settings import Setting
from fgraph.bridges.sync.adapters.nats_errors import INSECURE_HINT   # the hints' home: the errors' module

CREDS = Setting("FGRAPH_NATS_CREDS", "unset",
                "NATS credentials file (JWT and seed) for `fgraph sync` with a `nats://` or `tls://` URL")
USER = Setting("FGRAPH_NATS_USER", "unset", "NATS user name for `fgraph sync`; the password is `FGRAPH_NATS_PASSWORD`")
PASSWORD = Setting("FGRAPH_NATS_PASSWORD", "unset", "NATS password of `FGRAPH_NATS_USER`")
TOKEN = Setting("FGRAPH_NATS_TOKEN", "unset", "NATS authentication token for `fgraph sync`")
CA = Setting("FGRAPH_NATS_CA", "the system's CAs", "CA bundle (PEM) that a `tls://` NATS server's certificate must chain to")
SETTINGS = (CREDS, USER, PASSWORD, TOKEN, CA)   # the NATS adapter's (nats.py re-exports them for the registry)


def auth(environ: Mapping[str, str] | None = None) -> dict:
    """How ``fgraph sync`` authenticates to NATS: only from the environment, never the command line."""
    keys = {"creds": CREDS, "user": USER, "password": PASSWORD, "token": TOKEN, "ca": CA}
    return {key: value for key, row in keys.items() if (value := settings.read(row, environ))}


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
    """Refuse, before any name lookup or connection, credentials for a ``nats://`` URL of another
    machine: each seed of ``nats://a:4222,b:4222`` is checked, so one seed of another machine is enough."""
    scheme, _, seeds = server.partition("://")
    for seed in seeds.split(","):
        parts = urllib.parse.urlsplit(f"{scheme}://{seed}")
        if parts.scheme == "nats" and has_credentials(login) and not insecure and not is_loopback(parts.hostname or ""):
            raise Unsupported(f"credentials would travel in clear to {parts.scheme}://{seed} (a nats:// URL is "
                              "plain text)", INSECURE_HINT)


LOGIN_FILE_LIMIT = 1 << 20   # a creds file is a few hundred bytes, a CA bundle of the system about 200 kB
CREDS_FORM = re.compile(r"-----BEGIN NATS USER JWT-----\s*\n\s*([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)\s*\n"
                        r"(?:.*\n)*?.*-----BEGIN USER NKEY SEED-----\s*\n\s*(SU[A-Z2-7]{40,})\s*(?:\n|$)")

PEM_CERTIFICATE = re.compile(rb"-----BEGIN CERTIFICATE-----[A-Za-z0-9+/=\s]+?-----END CERTIFICATE-----")


def _read_login_file(path: str, setting: str, what: str) -> bytes:
    """The bytes of the file a setting names: missing, a FIFO, a device, a directory or a file over
    the limit are refused at once with a typed error naming the setting (never a hang)."""
    if not os.path.exists(path):
        raise NotFound(f"the {what} {path!r} ({setting}) does not exist", f"check {setting}")
    hint = f"point {setting} at a regular file"
    with open_regular_input(path, f"{what} ({setting})", hint) as handle:
        data = handle.read(LOGIN_FILE_LIMIT + 1)
    if len(data) > LOGIN_FILE_LIMIT:
        raise FormatError(f"the {what} {path!r} ({setting}) is larger than {LOGIN_FILE_LIMIT} bytes", hint)
    return data


def read_creds(path: str) -> str:
    """The text of the NATS creds file ``path`` (``FGRAPH_NATS_CREDS``), checked: a user JWT and the
    user's nkey seed, as ``nsc`` writes them. nats-py gets the text, never the path, so it reads
    nothing itself (no FIFO can hang it, no file swapped in after the check is read)."""
    data = _read_login_file(path, "FGRAPH_NATS_CREDS", "NATS creds file")
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        text = ""
    found = CREDS_FORM.search(text)
    if found is not None:
        try:
            import nkeys
            nkeys.from_seed(bytearray(found.group(2).encode())).wipe()
        except ImportError:
            raise Unsupported("a NATS creds file needs the nkeys package", "install the extra: pip install 'fgraph[nats]'") \
                from None
        except Exception:   # nkeys raises its own errors for a seed that does not decode
            found = None
    if found is None:
        raise FormatError(f"the NATS creds file {path!r} (FGRAPH_NATS_CREDS) holds no user JWT and nkey seed",
                          "point FGRAPH_NATS_CREDS at the .creds file nsc wrote for the user (nsc generate creds)")
    return text


def tls_context(path: str | None) -> ssl.SSLContext:
    """A verifying TLS context: the system's CAs, or only the PEM bundle ``path`` (``FGRAPH_NATS_CA``),
    read here with the checks of ``_read_login_file``."""
    if not path:
        return ssl.create_default_context()
    data = _read_login_file(path, "FGRAPH_NATS_CA", "CA bundle")
    pem = "".join(m.decode("ascii") + "\n" for m in PEM_CERTIFICATE.findall(data))
    try:
        if not pem:
            raise ValueError("no BEGIN CERTIFICATE block")
        return ssl.create_default_context(cadata=pem)
    except (ssl.SSLError, ValueError) as exc:
        raise FormatError(f"the CA bundle {path!r} (FGRAPH_NATS_CA) holds no PEM certificate ({exc})",
                          "point FGRAPH_NATS_CA at the PEM file of the CA that signed the server's certificate") from None


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
