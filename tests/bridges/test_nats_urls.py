"""The URLs of ``fgraph sync`` through NATS (issue 48 items 1 and 4; adapters/nats_urls.py): several
seeds of one cluster, IPv6 addresses in brackets, and a bad port, host or seed a ``TypeError``
naming what to write — never ``internal error`` — before any name lookup."""

from __future__ import annotations

import json

import pytest

from fgraph.core.errors import ValueTypeError
from tests.support.nats import NatsServer, free_port, needs_server
from tests.support.syncing import cli, write_sources

pytest.importorskip("nats", reason="no nats-py (pip install 'fgraph[nats]')")


@pytest.mark.parametrize("url, what", [
    ("nats://h:99999/S", "port"), ("nats://h:abc/S", "port"), ("nats://h:0/S", "port"), ("nats://h:-1/S", "port"),
    ("nats://::1:4222/S", "IPv6"), ("nats://[::1/S", "IPv6"), ("nats://[127.0.0.1]:4222/S", "IPv6"),
    ("nats://a:4222,,b:4222/S", "empty"), ("nats://h a:4222/S", "host"), ("nats://h:4222/S?x=1", "query"),
    ("nats://a:4222,u:p@b:4222/S", "credentials"), ("nats://a:4222,b:4222", "stream"),
])
def test_a_bad_url_is_a_type_error_naming_what_is_wrong(url, what):
    from fgraph.bridges.sync.adapters import nats as sync_nats
    with pytest.raises(ValueTypeError) as error:
        sync_nats.parse_url(url)
    assert what.lower() in str(error.value).lower() or what == "empty" and "missing" in str(error.value)


def test_seeds_and_ipv6_urls_are_read():
    from fgraph.bridges.sync.adapters import nats_urls
    assert nats_urls.parse("nats://a:4222,b:4223/S") == ("nats", ["nats://a:4222", "nats://b:4223"], "S")
    assert nats_urls.parse("tls://a,[::1]:7422/EV") == ("tls", ["tls://a:4222", "tls://[::1]:7422"], "EV")
    assert nats_urls.parse("nats://[::1]:4222/S")[1] == ["nats://[::1]:4222"]


def test_the_cli_says_a_bad_port_is_a_type_error(tmp_path):
    write_sources(tmp_path, 1, names=("a",))
    for url in ("nats://127.0.0.1:99999/S", "nats://127.0.0.1:abc/S", "nats://127.0.0.1:4222,127.0.0.1:x/S"):
        proc = cli("sync", "--from", "a.db", "--to", url, cwd=tmp_path, check=False)
        assert proc.returncode == 1 and proc.stderr.decode().startswith("TypeError: "), proc.stderr.decode()


@needs_server
def test_an_ipv6_url_reaches_a_server_on_ipv6(tmp_path):
    root = tmp_path / "v6"
    root.mkdir()
    try:
        server = NatsServer(root, host="::1").start()
    except (AssertionError, OSError):
        pytest.skip("no IPv6 loopback here")
    try:
        write_sources(tmp_path, 3, names=("a",))
        assert server.url.startswith("nats://[::1]:")
        cli("sync", "--from", "a.db", "--to", f"{server.url}/V6", "--create-stream", cwd=tmp_path)
        out = cli("--json", "sync", "--from", f"{server.url}/V6", "--to", "t.db", cwd=tmp_path).stdout
        assert json.loads(out)["applied"] == 3
    finally:
        server.stop()
    gone = cli("sync", "--from", "a.db", "--to", f"nats://[::1]:{free_port()}/S", cwd=tmp_path, check=False)
    assert gone.returncode == 1 and gone.stderr.decode().startswith("NotFound: NATS server nats://[::1]:")
