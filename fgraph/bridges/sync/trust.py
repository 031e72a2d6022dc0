"""What a receiver trusts: the key each store speaks with, and what each store may erase here
(issue 47 item 1, decisions T1–T3 in docs/forgetting.md).

- **Pins** (trust on first use): the first verified record of a store pins its key in
  ``<target>.sync-keys.json`` (written atomically, never through a link). A later record of that
  store sealed by another key is refused until the operator accepts the new key
  (``fgraph sync … --accept-key STORE:KEY``); a pin marked ``"revoked": true`` refuses the store.
- **A policy** (``--trust FILE``, ``fgraph-trust/1``): the keys the operator names, each with the
  store it speaks for and ``may_erase`` — ``own`` (the default) or ``any``. With a policy, a store
  it does not name is refused: nothing is pinned on first use.
- **Provenance** (``<target>.sync-provenance``, appended after each committed batch): which store's
  records brought which of the target's transactions, as runs ``STORE FIRST_TX LAST_TX``. It says
  who introduced an entity or attribute here, which decides whether that store's excision may
  erase it (``Trust.allow_erasure``).

Nothing here acts on a record: ``check`` raises ``Refused`` (a ``Conflict`` naming the record and
what to do) and the caller sets the record aside.
"""

from __future__ import annotations

import json
import os
import time

from fgraph.core.errors import Conflict, FgraphError, FormatError, ValueTypeError
from fgraph.core.files import append_sidecar, read_sidecar, read_sidecar_lines, write_atomically
from fgraph.core.limits import MEMORY
from fgraph.core.sidecars import SYNC_KEYS, SYNC_PROVENANCE
from fgraph.bridges.sync.signing import Seal, link, public_key_bytes, signed_bytes, verify, verify_signed

PINS_SUFFIX = SYNC_KEYS            # the names: fgraph.core.sidecars, where every sidecar name is listed
PINS_FORMAT = "fgraph-sync-keys/1"
POLICY_FORMAT = "fgraph-trust/1"
PROVENANCE_SUFFIX = SYNC_PROVENANCE
PROVENANCE_FORMAT = b"fgraph-sync-provenance/1\n"
ERASE_SCOPES = ("own", "any")
FILE_SCOPE = "file"      # the scope a file sync seals and checks excision records in (a log's is its name)


class Refused(Conflict):
    """A record this receiver will not act on: unsigned, badly sealed, sealed by a key that does not
    speak for its store, or an excision of something its store did not bring here."""

    def __init__(self, message: str, hint: str, *, store: str = "", where: str = ""):
        super().__init__(message, hint)
        self.store, self.where = store, where


def _load_json(path: str, what: str, form: str) -> dict | None:
    raw = read_sidecar(path, what)
    if raw is None:
        return None
    try:
        document = json.loads(raw)
    except ValueError:
        document = None
    if not isinstance(document, dict) or document.get("format") != form:
        raise FormatError(f"the {what} {path!r} is not an fgraph {form} file",
                          f"its first key must be \"format\": \"{form}\" (docs/forgetting.md T2)")
    return document


def _policy(path: str) -> dict:
    document = _load_json(path, "trust policy", POLICY_FORMAT)
    if document is None:
        raise FormatError(f"the trust policy {path!r} does not exist", "check the path given to --trust")
    keys = document.get("keys")
    if not isinstance(keys, list):
        raise FormatError(f"the trust policy {path!r} has no list \"keys\"",
                          '{"format":"fgraph-trust/1","keys":[{"store":"…","key":"ed25519:…","may_erase":"own"}]}')
    out: dict = {}
    for n, entry in enumerate(keys, 1):
        where = f"the trust policy {path!r}, key {n}"
        if not isinstance(entry, dict) or not isinstance(entry.get("store"), str) or not entry["store"] \
                or not set(entry) <= {"store", "key", "may_erase", "note"}:
            raise FormatError(f"{where} is not {{\"store\", \"key\", \"may_erase\"}}",
                              "name the store id it speaks for, its key and what it may erase")
        try:
            public_key_bytes(entry.get("key"))
        except FormatError as exc:
            raise FormatError(f"{where}: {exc.message}", exc.hint) from None
        scope = entry.get("may_erase", "own")
        if scope not in ERASE_SCOPES:
            raise FormatError(f"{where}: may_erase {scope!r} is neither \"own\" nor \"any\"",
                              "\"own\": what that store brought here; \"any\": anything")
        if entry["store"] in out:
            raise FormatError(f"{where} names store {entry['store']} a second time", "one key per store")
        out[entry["store"]] = {"key": entry["key"], "may_erase": scope}
    return out


def parse_acceptance(text: str) -> tuple[str, str]:
    """``STORE:KEY`` of ``--accept-key`` → (store, key)."""
    store, _, key = str(text).partition(":")
    if not store or not key:
        raise ValueTypeError(f"--accept-key {text!r} is not STORE:KEY",
                             "write the store id, a colon and its key as the refusal printed it")
    public_key_bytes(key)
    return store, key


class Trust:
    """The keys and erasure rights of one receiver (a target store, by its path)."""

    def __init__(self, target: str, *, policy: str | None = None, accept=()):
        self.target = str(target)
        self.in_memory = self.target == MEMORY
        self.pins_path = os.path.realpath(self.target) + PINS_SUFFIX
        self.provenance_path = os.path.realpath(self.target) + PROVENANCE_SUFFIX
        self.policy = _policy(str(policy)) if policy is not None else None
        self.pins: dict = {}
        if not self.in_memory:
            document = _load_json(self.pins_path, "pinned keys", PINS_FORMAT)
            pins = {} if document is None else document.get("stores")
            if not isinstance(pins, dict) or not all(isinstance(v, dict) for v in pins.values()):
                raise FormatError(f"the pinned keys {self.pins_path!r} are damaged",
                                  "restore it from a backup, or delete it: every store's key is pinned again at "
                                  "its next record (trust on first use)")
            self.pins = pins
        accepted = [parse_acceptance(text) for text in accept]
        for store, key in accepted:
            self.pins[store] = {"key": key, "since": time.time(), "accepted": True}
        if accepted:
            self._save()

    def _save(self) -> None:
        if self.in_memory:
            return
        text = json.dumps({"format": PINS_FORMAT, "stores": self.pins}, sort_keys=True, indent=1) + "\n"
        write_atomically(self.pins_path, text.encode("utf-8"), "pinned keys")

    def key_of(self, store: str) -> str | None:
        if self.policy is not None:
            entry = self.policy.get(store)
            return None if entry is None else entry["key"]
        pin = self.pins.get(store)
        return None if pin is None else pin.get("key")

    def check(self, store: str, seal: Seal | None, scope: str, kind: str, msg_id: str, prev: str | None,
              line: str | bytes, where: str, verified: bool = False) -> None:
        """Raise ``Refused`` unless ``seal`` is ``store``'s key's signature of this record; a store
        met for the first time (no policy) has its key pinned, after the signature verifies.
        ``verified``: the signature was proved already, through a chain (``verified_runs``)."""
        what = f"the {kind} record {msg_id} of store {store} ({where})"
        if seal is None:
            raise Refused(f"{what} is unsigned", "only records a store sealed with its own key are applied; "
                          "if that store runs an fgraph without signing, upgrade it and publish again",
                          store=store, where=where)
        pin = self.pins.get(store) if self.policy is None else None
        if pin is not None and pin.get("revoked"):
            raise Refused(f"{what}: the key of store {store} is revoked here",
                          f"accept a new key with --accept-key {store}:KEY, or drop the store", store=store,
                          where=where)
        expected = self.key_of(store)
        if expected is None and self.policy is not None:
            raise Refused(f"{what} is sealed by {seal.key}, and the trust policy names no key for store {store}",
                          "add the store and its key to the policy file if you trust it", store=store, where=where)
        if expected is not None and seal.key != expected:
            how = ("edit the trust policy" if self.policy is not None
                   else f"accept it with `fgraph sync … --accept-key {store}:{seal.key}`")
            raise Refused(f"{what} is sealed by {seal.key}, but store {store} speaks with {expected} here",
                          f"if that store rotated its key (ask its owner), {how}; otherwise someone else is "
                          "publishing in its name: nothing of it was applied", store=store, where=where)
        if not verified and not verify(seal, scope, store, kind, msg_id, prev, line):
            raise Refused(f"{what} does not verify under {seal.key} for {scope!r}",
                          "it was altered, forged, or replayed from another log: nothing of it was applied",
                          store=store, where=where)
        if expected is None:
            self.pins[store] = {"key": seal.key, "since": time.time(), "first": where}
            self._save()

    def may_erase_any(self, store: str) -> bool:
        return self.policy is not None and self.policy.get(store, {}).get("may_erase") == "any"

    # -- provenance ---------------------------------------------------------------------------------
    def note_provenance(self, runs: list) -> None:
        """Record that ``store`` brought the target's transactions ``first``…``last`` (``runs`` of
        ``(store, first, last)``), after the batch that brought them committed."""
        if self.in_memory or not runs:
            return
        text = "".join(f"{store} {first} {last}\n" for store, first, last in runs).encode("ascii")
        fresh = not os.path.lexists(self.provenance_path)
        append_sidecar(self.provenance_path, (PROVENANCE_FORMAT if fresh else b"") + text, "sync provenance")

    def brought_by(self, tx: int) -> str | None:
        """The store whose records brought the target's transaction ``tx`` (None: not recorded)."""
        if self.in_memory:
            return None
        for n, raw in enumerate(read_sidecar_lines(self.provenance_path, "sync provenance")):
            if n == 0:
                if raw != PROVENANCE_FORMAT:
                    raise FormatError(f"{self.provenance_path!r} is not fgraph's sync provenance",
                                      "move it away; excisions from a log then erase only with may_erase any")
                continue
            parts = raw.split()
            if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit() and int(parts[1]) <= tx <= int(parts[2]):
                return parts[0].decode("ascii", "replace")
        return None

    def allow_erasure(self, store: str, where: str, source=None):
        """The check ``carry_out`` makes before erasing the target: ``store`` may erase an entity or
        attribute that *it* introduced here — the event that created it here came through its
        records (provenance), or, from a file sync, the source file holds that event — or anything
        when the policy says ``may_erase: any``. Anything written here, or brought by another
        store, is refused."""
        def check(target, event: str, tx: int, imported: bool) -> None:
            if self.may_erase_any(store):
                return
            if imported:
                if self.brought_by(tx) == store:
                    return
                if source is not None and source.holds_event(event):
                    return
            came = "was written here" if not imported else (
                f"came from store {self.brought_by(tx)}" if self.brought_by(tx) else "came from elsewhere")
            raise Refused(f"the excision of {json.dumps(target)} by store {store} ({where}) is refused: that "
                          f"{'entity or attribute'} {came} (event {event}), not from store {store}",
                          "nothing was erased; if it must go, excise it here yourself (`fgraph excise`), or let "
                          "that store's key erase anything (--trust FILE with \"may_erase\": \"any\")",
                          store=store, where=where)
        return check


def verified_runs(records, scope: str) -> set:
    """The ids of the event ``records`` (``log.Record``s) whose seals are proved by one verification
    per run: following each store's records in order, a record whose ``chain`` is the link of the
    one before continues the run, and verifying the run's last signature proves every record of it
    (each link is a SHA-256 of the bytes a seal signs, which hold the link before). A run whose last
    signature fails proves nothing: its records are then verified one by one, as any other."""
    runs: dict = {}          # store → the current run: [(record, link)], all under one key
    proved: set = set()

    def close(run) -> None:
        if len(run) > 1 and verify_signed(run[-1][0].seal, run[-1][2]):
            proved.update(id(record) for record, _, _ in run)
    for record in records:
        seal = record.seal
        if record.kind != "event" or seal is None or not isinstance(seal.chain, str):
            continue
        try:
            signed = signed_bytes(scope, record.store, "event", record.event, record.prev, record.line, seal.chain)
        except FgraphError:
            continue
        run = runs.get(record.store)
        if run and (seal.chain != run[-1][1] or seal.key != run[-1][0].seal.key):
            close(run)
            run = None
        if not run:
            run = runs[record.store] = []
        run.append((record, link(signed), signed))
    for run in runs.values():
        close(run)
    return proved


def refused_summary(refused: list, into: str) -> FgraphError:
    """One typed error for the records a run set aside (the first named, the rest counted)."""
    first = refused[0]
    more = f" and {len(refused) - 1} more" if len(refused) > 1 else ""
    error = Refused(f"sync into {into!r} refused {first.message}{more}; everything else was applied",
                    first.hint + "; the refused records were not acknowledged and come back at the next run",
                    store=first.store, where=first.where)
    error.refused = refused
    return error
