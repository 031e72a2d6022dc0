"""A store's signing key and the seals it puts on what it publishes (issue 47 item 1, decision T1 in
docs/forgetting.md).

Every record a store publishes on a log (its event/1 lines, its ``excision/1`` records and
remainders) and every excision record a file sync carries is *sealed*: an Ed25519 signature by the
store's own key over the bytes ``signed_bytes`` builds — the log's own name (``scope``: a stream,
never a server address, so a record replayed onto another stream does not verify), the store id,
the kind of record, its message id, the event before it, the *link* of the record the store
published before it in the same run (``chain``) and the record's bytes. A seal is the key id
(``ed25519:`` and the public key, base64url), the signature and that chain; adapters carry them
beside the record (NATS: the headers ``Fgraph-Key``, ``Fgraph-Sig`` and ``Fgraph-Chain``).

The chain is what keeps verification cheap (an Ed25519 verification costs about 60 µs, three times
what applying a small event does): a record's link is the SHA-256 of the bytes its seal signs, which
hold the link before it, so a consumer that checks the links of a run of one store's records
verifies one signature — the run's last — for all of them (``trust.Trust.verified_runs``). Every
record keeps its own signature, so each can still be verified alone.

The key is created on first need — a store's first publish to a log (``sync --to URL``, ``excise
--reach URL``) or the first file sync that carries one of its excisions — beside the store as
``<db>.signing-key`` (or where ``--signing-key PATH`` says), with ``O_EXCL | O_NOFOLLOW`` and mode
0600 (``core.files.create_private``); it is never printed. A key file that is a link, a FIFO, not
fgraph's format, or readable by group or others is refused with a typed error (nothing is
published); the public key id is what receivers pin (``trust.py``).
"""

from __future__ import annotations

import base64
import binascii
import os
from dataclasses import dataclass

from fgraph.core.errors import FormatError
from fgraph.core.files import create_private, read_private
from fgraph.core.sidecars import SIGNING_KEY

KEY_SUFFIX = SIGNING_KEY    # the name: fgraph.core.sidecars, where every sidecar name is listed
KEY_FORMAT = "fgraph-signing-key/1"
KEY_PREFIX = "ed25519:"           # the one key format: a key id is this and the base64url public key
SEED_PREFIX = "ed25519-seed:"     # in the key file: the 32-byte private seed, base64url
SEAL_FORMAT = b"fgraph-seal/1"
KEY_FILE_LIMIT = 4096
KINDS = ("event", "excision", "remainder")


@dataclass(frozen=True)
class Seal:
    """A record's proof of origin: the signer's key id, the signature, and the link of the record
    its store published before it in the same run ("" at a run's start), all text."""

    key: str
    sig: str
    chain: str = ""


def key_path(db_path: str) -> str:
    """Where a store's signing key lives unless ``--signing-key`` says otherwise."""
    return str(db_path) + KEY_SUFFIX


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _unb64(text: str, size: int) -> bytes | None:
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        return None
    return raw if len(raw) == size and _b64(raw) == text else None


def public_key_bytes(key_id: object) -> bytes:
    """The 32 bytes of an ``ed25519:…`` key id; any other format is a ``FormatError``."""
    raw = _unb64(key_id[len(KEY_PREFIX):], 32) if isinstance(key_id, str) and key_id.startswith(KEY_PREFIX) else None
    if raw is None:
        shown = key_id if isinstance(key_id, str) else repr(key_id)
        raise FormatError(f"{shown[:80]!r} is not a key fgraph knows",
                          "write a key id as fgraph prints it: ed25519: and 43 base64url characters "
                          "(`fgraph sync` reports each store's key under `key`)")
    return raw


def signed_bytes(scope: str, store: str, kind: str, msg_id: str, prev: str | None, line: str | bytes,
                 chain: str = "") -> bytes:
    """What a seal signs: NUL-separated fields (none of which may hold a NUL), then the record's bytes."""
    fields = (scope, store, kind, msg_id, prev or "", chain)
    if any("\x00" in field for field in fields):
        raise FormatError("a field of a sealed record holds a NUL character", "a log record's ids never do")
    body = line.encode("utf-8") if isinstance(line, str) else line
    return SEAL_FORMAT + b"\x00" + "\x00".join(fields).encode("utf-8") + b"\x00" + body


def link(signed: bytes) -> str:
    """A record's link: the SHA-256 (hex) of the bytes its seal signs; the next record's ``chain``."""
    import hashlib
    return hashlib.sha256(signed).hexdigest()


class Signer:
    """A store's private key, ready to seal records."""

    def __init__(self, seed: bytes, path: str):
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
        from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
        self._key = Ed25519PrivateKey.from_private_bytes(seed)
        self.path = path
        self.last_link = ""           # the link of the record sealed last: the next one's chain
        self.key_id = KEY_PREFIX + _b64(self._key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw))

    def __repr__(self) -> str:          # never the seed
        return f"Signer({self.key_id})"

    def seal(self, scope: str, store: str, kind: str, msg_id: str, prev: str | None, line: str | bytes,
             chain: str = "") -> Seal:
        """The seal of one record, outside the chain of a store's events unless ``chain`` is given."""
        signed = signed_bytes(scope, store, kind, msg_id, prev, line, chain)
        return Seal(self.key_id, _b64(self._key.sign(signed)), chain)

    def seal_next(self, scope: str, store: str, kind: str, msg_id: str, prev: str | None,
                  line: str | bytes) -> Seal:
        """The seal of the next record of the chain: its ``chain`` is the link of the record this
        signer sealed with ``seal_next`` before (``""`` for the first)."""
        signed = signed_bytes(scope, store, kind, msg_id, prev, line, self.last_link)
        seal = Seal(self.key_id, _b64(self._key.sign(signed)), self.last_link)
        self.last_link = link(signed)
        return seal


def _parse_key_file(raw: bytes, path: str) -> bytes:
    lines = raw.split(b"\n")
    seed = None
    if len(lines) == 3 and lines[2] == b"" and lines[0] == KEY_FORMAT.encode() and lines[1].startswith(SEED_PREFIX.encode()):
        seed = _unb64(lines[1][len(SEED_PREFIX):].decode("ascii", "replace"), 32)
    if seed is None:
        raise FormatError(f"the signing key {path!r} is not an fgraph signing key",
                          "restore it from your backup, or move it away and let fgraph create a new one (then "
                          "every receiver must accept the new key: `fgraph sync … --accept-key STORE:KEY`)")
    return seed


def load(path: str, *, create: bool = True) -> Signer:
    """The signing key at ``path``; created there (0600, exclusively) when missing and ``create``."""
    path = str(path)
    raw = read_private(path, "signing key", KEY_FILE_LIMIT)
    if raw is None:
        if not create:
            raise FormatError(f"there is no signing key at {path!r}", "publish once to create it, or name it")
        seed = os.urandom(32)
        create_private(path, f"{KEY_FORMAT}\n{SEED_PREFIX}{_b64(seed)}\n".encode("ascii"), "signing key")
        return Signer(seed, path)
    return Signer(_parse_key_file(raw, path), path)


def for_store(db_path: str, explicit: str | None = None) -> Signer:
    """The signer of the store at ``db_path``: ``explicit`` (``--signing-key``) or ``<db>.signing-key``."""
    return load(explicit if explicit is not None else key_path(os.path.realpath(str(db_path))))


_PUBLIC: dict = {}     # key id → the public key object: parsing one costs more than a verification


def verify(seal: Seal | None, scope: str, store: str, kind: str, msg_id: str, prev: str | None,
           line: str | bytes) -> bool:
    """Does ``seal`` sign this record? (False for no seal, an unknown key format or a bad signature.)"""
    if seal is None or not isinstance(seal.chain, str):
        return False
    try:
        signed = signed_bytes(scope, store, kind, msg_id, prev, line, seal.chain)
    except FormatError:
        return False
    return verify_signed(seal, signed)


def verify_signed(seal: Seal, signed: bytes) -> bool:
    """Does ``seal``'s signature sign ``signed`` under its key?"""
    public = _PUBLIC.get(seal.key)
    if public is None:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
        try:
            public = Ed25519PublicKey.from_public_bytes(public_key_bytes(seal.key))
        except (FormatError, ValueError):
            return False
        if len(_PUBLIC) > 1024:
            _PUBLIC.clear()
        _PUBLIC[seal.key] = public
    signature = _unb64(seal.sig, 64) if isinstance(seal.sig, str) else None
    if signature is None:
        return False
    from cryptography.exceptions import InvalidSignature
    try:
        public.verify(signature, signed)
    except InvalidSignature:
        return False
    return True
