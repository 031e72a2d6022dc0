"""A NATS credentials file (``FGRAPH_NATS_CREDS``: a user JWT and its nkey seed, what ``nsc``
hands a NATS user) logs ``fgraph sync`` into a server in operator mode, both ways; a creds file
of a user the server does not trust is refused with a typed error. The operator, account and
user are minted here with ``nkeys`` (the keys) and a few lines of JWT (claims signed by their
issuer), so the test needs no ``nsc``."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import time
from pathlib import Path

import pytest

from tests.support.nats import NatsServer, needs_server
from tests.support.syncing import cli, consume, publish, write_sources

nkeys = pytest.importorskip("nkeys", reason="no nkeys (pip install 'fgraph[nats]'): creds files need it")
UNLIMITED = {"subs": -1, "data": -1, "payload": -1, "imports": -1, "exports": -1, "wildcards": True, "conn": -1,
             "leaf": -1, "mem_storage": -1, "disk_storage": -1, "streams": -1, "consumer": -1}


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def keypair(prefix: int):
    return nkeys.from_seed(nkeys.encode_seed(os.urandom(32), prefix))


def jwt(issuer, subject: str, name: str, nats: dict) -> str:
    """A v2 NATS JWT: the claims, their hash as ``jti``, signed by ``issuer``'s seed (ed25519)."""
    claims = {"iat": int(time.time()), "iss": issuer.public_key.decode(), "name": name, "sub": subject,
              "nats": {**nats, "version": 2}}
    claims["jti"] = base64.b32encode(hashlib.sha256(json.dumps(claims, sort_keys=True).encode()).digest()) \
        .decode().rstrip("=")
    signing = f'{b64(json.dumps({"typ": "JWT", "alg": "ed25519-nkey"}).encode())}.{b64(json.dumps(claims).encode())}'
    return f"{signing}.{b64(issuer.sign(signing.encode()))}"


def creds_file(path: Path, user_jwt: str, user) -> Path:
    path.write_text(f"-----BEGIN NATS USER JWT-----\n{user_jwt}\n------END NATS USER JWT------\n\n"
                    f"-----BEGIN USER NKEY SEED-----\n{user.seed.decode()}\n------END USER NKEY SEED------\n")
    path.chmod(0o600)
    return path


def operator_mode(root: Path) -> tuple[str, Path, Path]:
    """A server config trusting one operator, with a JetStream account and a user of it; returns the
    config, a creds file of that user and one of a user signed by a stranger account."""
    operator, system, account = (keypair(nkeys.PREFIX_BYTE_OPERATOR), keypair(nkeys.PREFIX_BYTE_ACCOUNT),
                                 keypair(nkeys.PREFIX_BYTE_ACCOUNT))
    stranger = keypair(nkeys.PREFIX_BYTE_ACCOUNT)
    user, outsider = keypair(nkeys.PREFIX_BYTE_USER), keypair(nkeys.PREFIX_BYTE_USER)
    op_jwt = jwt(operator, operator.public_key.decode(), "fgraph-test", {"type": "operator"})
    accounts = {key.public_key.decode(): jwt(operator, key.public_key.decode(), name, claims)
                for key, name, claims in ((system, "SYS", {"type": "account"}),   # the system account has no JetStream
                                          (account, "TEAM", {"type": "account", "limits": UNLIMITED}))}
    user_claims = {"type": "user", "pub": {}, "sub": {}, "subs": -1, "data": -1, "payload": -1}
    good = creds_file(root / "ada.creds", jwt(account, user.public_key.decode(), "ada", user_claims), user)
    bad = creds_file(root / "eve.creds", jwt(stranger, outsider.public_key.decode(), "eve", user_claims), outsider)
    (root / "operator.jwt").write_text(op_jwt)
    preload = "\n".join(f"  {pub}: {token}" for pub, token in accounts.items())
    config = root / "server.conf"
    config.write_text(f"operator: {root / 'operator.jwt'}\nsystem_account: {system.public_key.decode()}\n"
                      f"resolver: MEMORY\nresolver_preload: {{\n{preload}\n}}\n")
    return str(config), good, bad


@needs_server
def test_a_creds_file_from_the_settings_logs_sync_in_both_ways(tmp_path):
    root = tmp_path / "nats"
    root.mkdir()
    config, good, bad = operator_mode(root)
    srv = NatsServer(root, "-c", config).start()
    try:
        write_sources(tmp_path, 3, names=("a",))
        url = f"{srv.url}/CREDS"
        refused = cli("sync", "--from", "a.db", "--to", url, "--create-stream", cwd=tmp_path, check=False,
                      extra_env={"FGRAPH_NATS_CREDS": str(bad)})
        assert refused.returncode == 1 and refused.stderr.decode().startswith("Unsupported: NATS server"), \
            refused.stderr.decode()
        assert "Traceback" not in refused.stderr.decode()
        login = {"FGRAPH_NATS_CREDS": str(good)}
        assert publish(tmp_path, url, "--create-stream", names=("a",), extra_env=login)["published"] == 3
        assert consume(tmp_path, url, "t.db", extra_env=login)["applied"] == 3
        anonymous = cli("sync", "--from", url, "--to", "u.db", cwd=tmp_path, check=False)
        assert anonymous.returncode == 1 and "FGRAPH_NATS_CREDS" in anonymous.stderr.decode()
    finally:
        srv.stop()
