"""Proves ``fgraph sync`` through NATS JetStream (issue 32 item 1, docs/replication.md) against a real
``nats-server -js`` on loopback, started and stopped by each test: three stores publish into a
stream and two central stores consume it, every event exactly once, in its source's order, with
identical tails; re-runs publish and apply nothing; a broker restart in the middle of a publishing
and a consuming ``--follow`` loses and doubles nothing; credentials come from the settings; a
missing server, stream or extra is a typed error. What every adapter must do (order, dedup,
refusals, resume, forgetting's side records) is proved against this server too, by
test_adapters_contract.py."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.nats import NatsServer, free_port, needs_server
from tests.support.syncing import (FGRAPH, SOURCES, assert_fan_in, cli, consume, env, publish, tail, wait_for,
                                   write_sources)


def stop_following(procs: list[subprocess.Popen]) -> list[tuple[bytes, bytes]]:
    """SIGTERM each ``--follow`` run still going and collect what they printed (checked by the
    caller after ``finally``, so a failure inside the test is the one reported)."""
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    return [proc.communicate(timeout=60) for proc in procs]


def assert_ended_cleanly(procs: list[subprocess.Popen], outs: list[tuple[bytes, bytes]]) -> None:
    for proc, (_out, err) in zip(procs, outs):
        assert proc.returncode == 0, err.decode()


# ----------------------------------------------------------------- stores → stream → stores

@needs_server
def test_three_stores_through_a_stream_into_two_centrals_with_identical_tails(tmp_path, server):
    url = f"{server.url}/EVENTS"
    write_sources(tmp_path, 30)
    first = publish(tmp_path, url, "--create-stream", "--batch-size", "7")
    assert (first["events"], first["published"], first["duplicates"]) == (90, 90, 0)
    assert len({r["store"] for r in first["sources"]}) == 3
    assert all(r["position"] == r["latest"] for r in first["sources"])

    for target in ("central1.db", "central2.db"):
        summary = consume(tmp_path, url, target, "--batch-size", "16")
        assert (summary["events"], summary["applied"], summary["already_applied"]) == (90, 90, 0)
        assert_fan_in(tmp_path, target)
    assert tail(tmp_path / "central1.db") == tail(tmp_path / "central2.db")
    tails = [cli("--db", t, "tail", cwd=tmp_path).stdout for t in ("central1.db", "central2.db")]
    assert tails[0] == tails[1] and tails[0].count(b"\n") == 90

    again = publish(tmp_path, url)                     # where each source stands comes from the stream
    assert (again["events"], again["published"]) == (0, 0)
    assert [r["since"] for r in again["sources"]] == [r["position"] for r in first["sources"]]
    assert consume(tmp_path, url, "central1.db")["events"] == 0

    write_sources(tmp_path, 5, first=30, names=("b",))
    more = publish(tmp_path, url)
    assert [(r["source"], r["published"]) for r in more["sources"]] == [("a.db", 0), ("b.db", 5), ("c.db", 0)]
    assert consume(tmp_path, url, "central1.db")["applied"] == 5
    assert consume(tmp_path, url, "central2.db")["applied"] == 5
    assert tail(tmp_path / "central1.db") == tail(tmp_path / "central2.db")
    assert_fan_in(tmp_path, "central1.db")


@needs_server
def test_a_republished_event_is_a_duplicate_for_jetstream(tmp_path, server):
    """An event appended again (as a publisher killed before it saw its ack would) gets a duplicate
    ack from JetStream, keyed by the event UUID: the stream holds each event once."""
    from fgraph.bridges.sync.adapters.nats import NatsLog
    write_sources(tmp_path, 3, names=("a",))
    url = f"{server.url}/DUP"
    publish(tmp_path, url, "--create-stream", names=("a",))
    lines = tail(tmp_path / "a.db")
    with NatsLog(url) as log:
        store = publish(tmp_path, url, names=("a",))["sources"][0]["store"]
        last = log.last(store)
        fresh = log.append(store, "a.db", lines[-1], json.loads(lines[-1])["event"], None)
        assert fresh is False and log.last(store) == last
    assert consume(tmp_path, url, "t.db")["applied"] == 3


@needs_server
def test_a_broker_restart_mid_run_loses_and_doubles_nothing(tmp_path, server):
    url = f"{server.url}/RESTART"
    write_sources(tmp_path, 150)
    publish(tmp_path, url, "--create-stream", names=("a",))          # the stream exists; a is already in
    procs = [subprocess.Popen([FGRAPH, "--json", "sync", *[a for n in SOURCES for a in ("--from", f"{n}.db")],
                               "--to", url, "--follow", "--batch-size", "10", "--interval", "0.05"],
                              cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env()),
             subprocess.Popen([FGRAPH, "--json", "sync", "--from", url, "--to", "central.db", "--follow",
                               "--batch-size", "10", "--interval", "0.05", "--ack-wait", "2"],
                              cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env())]
    try:
        wait_for(lambda: 150 < count(tmp_path / "central.db"), 60, "the first events to arrive")
        server.stop()
        write_sources(tmp_path, 30, first=150)            # committed while the broker is down
        time.sleep(1.0)
        assert all(p.poll() is None for p in procs)
        server.start()
        wait_for(lambda: count(tmp_path / "central.db") >= 540, 90, "every event to arrive after the restart")
    finally:
        outs = stop_following(procs)
    assert_ended_cleanly(procs, outs)
    published = json.loads(outs[0][0])
    assert published["events"] == 390 and published["published"] + published["duplicates"] == 390
    assert_fan_in(tmp_path)
    assert consume(tmp_path, url, "central.db")["applied"] == 0
    assert consume(tmp_path, url, "other.db")["applied"] == 540


def count(path: Path) -> int:
    if not path.exists():
        return 0
    try:
        return len(tail(path))
    except Exception:   # the consumer is creating the file right now
        return 0


@needs_server
def test_an_older_copy_of_a_published_store_is_a_conflict(tmp_path, server):
    """The stream holds events the copy does not have: publishing it would fork the store's subject."""
    url = f"{server.url}/FORK"
    write_sources(tmp_path, 2, names=("a",))
    cli("--db", "a.db", "backup", "old.db", cwd=tmp_path)
    write_sources(tmp_path, 2, first=2, names=("a",))
    publish(tmp_path, url, "--create-stream", names=("a",))
    proc = cli("sync", "--from", "old.db", "--to", url, cwd=tmp_path, check=False)
    assert proc.returncode == 1 and proc.stderr.decode().startswith("Conflict: the log ")
    assert "which that store does not have" in proc.stderr.decode()


@needs_server
def test_an_event_the_target_refuses_is_a_typed_error_and_nothing_of_its_batch_is_acknowledged(tmp_path, server):
    url = f"{server.url}/CLASH"
    for name in ("a", "b"):
        cli("--db", f"{name}.db", "declare", "user/email", "--type", "text", "--unique", cwd=tmp_path)
        cli("--db", f"{name}.db", "add", json.dumps({"id": f"{name}-user", "user/email": "same@example.test"}),
            cwd=tmp_path)
    publish(tmp_path, url, "--create-stream", names=("a", "b"))
    proc = cli("sync", "--from", url, "--to", "t.db", "--batch-size", "1", cwd=tmp_path, check=False)
    assert proc.returncode == 1 and proc.stderr.decode().startswith("Conflict: sync from ")
    assert "Traceback" not in proc.stderr.decode()
    before = tail(tmp_path / "t.db")
    assert len(before) == 3                                   # a's two events; b's declare; not b's user
    again = cli("sync", "--from", url, "--to", "t.db", cwd=tmp_path, check=False)   # redelivered, refused again
    assert again.returncode == 1 and tail(tmp_path / "t.db") == before


# ----------------------------------------------------------------- credentials and errors

@needs_server
def test_a_token_comes_from_the_settings_never_the_url(tmp_path):
    root = tmp_path / "nats"
    root.mkdir()
    srv = NatsServer(root, "--auth", "s3cret-token").start()
    try:
        write_sources(tmp_path, 2, names=("a",))
        url = f"{srv.url}/AUTH"
        refused = cli("sync", "--from", "a.db", "--to", url, "--create-stream", cwd=tmp_path, check=False)
        assert refused.returncode == 1 and refused.stderr.decode().startswith("Unsupported: NATS server")
        summary = publish(tmp_path, url, "--create-stream", names=("a",),
                          extra_env={"FGRAPH_NATS_TOKEN": "s3cret-token"})
        assert summary["published"] == 2
        in_url = cli("sync", "--from", "a.db", "--to", f"nats://s3cret-token@127.0.0.1:{srv.port}/AUTH",
                     cwd=tmp_path, check=False)
        assert in_url.returncode == 1 and in_url.stderr.decode().startswith("TypeError: credentials in the URL")
    finally:
        srv.stop()


@needs_server
def test_a_user_and_password_come_from_the_settings(tmp_path):
    root = tmp_path / "nats"
    root.mkdir()
    srv = NatsServer(root, "--user", "ada", "--pass", "pw-123").start()
    try:
        write_sources(tmp_path, 2, names=("a",))
        url = f"{srv.url}/USERS"
        wrong = cli("sync", "--from", "a.db", "--to", url, "--create-stream", cwd=tmp_path, check=False,
                    extra_env={"FGRAPH_NATS_USER": "ada", "FGRAPH_NATS_PASSWORD": "nope"})
        assert wrong.returncode == 1 and wrong.stderr.decode().startswith("Unsupported: NATS server")
        good = {"FGRAPH_NATS_USER": "ada", "FGRAPH_NATS_PASSWORD": "pw-123"}
        assert publish(tmp_path, url, "--create-stream", names=("a",), extra_env=good)["published"] == 2
        assert consume(tmp_path, url, "t.db", extra_env=good)["applied"] == 2
    finally:
        srv.stop()


def make_certificates(root: Path) -> None:
    """A CA and a server certificate for 127.0.0.1 it signed (openssl)."""
    def run(*args):
        subprocess.run(["openssl", *args], cwd=root, check=True, capture_output=True, timeout=60)
    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
        "-subj", "/CN=fgraph test CA")
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1")
    (root / "ext").write_text("subjectAltName=IP:127.0.0.1\n")
    run("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
        "-out", "server.pem", "-days", "2", "-extfile", "ext")


@needs_server
@pytest.mark.skipif(shutil.which("openssl") is None, reason="no openssl binary to make test certificates")
def test_a_tls_url_verifies_the_server_against_the_ca_setting(tmp_path):
    root = tmp_path / "nats"
    root.mkdir()
    make_certificates(root)
    srv = NatsServer(root, "--tls", "--tlscert", str(root / "server.pem"), "--tlskey", str(root / "server.key")).start()
    try:
        write_sources(tmp_path, 2, names=("a",))
        url = f"tls://127.0.0.1:{srv.port}/SECURE"
        untrusted = cli("sync", "--from", "a.db", "--to", url, "--create-stream", cwd=tmp_path, check=False)
        assert untrusted.returncode == 1 and "certificate" in untrusted.stderr.decode()
        assert untrusted.stderr.decode().count("\n") == 1 and "Traceback" not in untrusted.stderr.decode()
        ca = {"FGRAPH_NATS_CA": str(root / "ca.pem")}
        assert publish(tmp_path, url, "--create-stream", names=("a",), extra_env=ca)["published"] == 2
        assert consume(tmp_path, url, "t.db", extra_env=ca)["applied"] == 2
        # nats:// to a server that requires TLS: the client follows the server into TLS, still verified
        upgraded = cli("sync", "--from", "a.db", "--to", f"nats://127.0.0.1:{srv.port}/SECURE", cwd=tmp_path,
                       extra_env=ca)
        assert upgraded.stderr == b""
        refused = cli("sync", "--from", "a.db", "--to", f"nats://127.0.0.1:{srv.port}/SECURE", cwd=tmp_path,
                      check=False)
        assert refused.returncode == 1 and refused.stderr.decode().startswith("Unsupported: TLS with NATS server")
    finally:
        srv.stop()


@needs_server
def test_a_missing_stream_or_server_is_a_typed_error(tmp_path, server):
    write_sources(tmp_path, 1, names=("a",))
    for args in (("--from", "a.db", "--to", f"{server.url}/MISSING"), ("--from", f"{server.url}/MISSING", "--to", "t.db")):
        proc = cli("sync", *args, cwd=tmp_path, check=False)
        assert proc.returncode == 1
        assert proc.stderr.decode() == (f"NotFound: stream 'MISSING' does not exist on {server.url}; "
                                        "pass --create-stream to make it\n")
    assert not (tmp_path / "t.db").exists()
    start = time.monotonic()
    proc = cli("sync", "--from", "a.db", "--to", f"nats://127.0.0.1:{free_port()}/S", cwd=tmp_path, check=False)
    assert proc.returncode == 1 and proc.stderr.decode().startswith("NotFound: NATS server nats://127.0.0.1:")
    assert "unreachable" in proc.stderr.decode() and time.monotonic() - start < 10
    both = cli("sync", "--from", f"{server.url}/A", "--to", f"{server.url}/B", cwd=tmp_path, check=False)
    assert both.returncode == 1 and both.stderr.decode().startswith("TypeError: a log cannot be synced into a log")


def test_without_the_extra_the_error_names_it(monkeypatch):
    from fgraph.bridges.sync.adapters import nats as sync_nats
    from fgraph.core.errors import Unsupported
    monkeypatch.setitem(sys.modules, "nats", None)
    with pytest.raises(Unsupported, match=r"fgraph\[nats\]"):
        sync_nats.NatsLog("nats://127.0.0.1:1/S")


@pytest.mark.parametrize("url", ["nats://127.0.0.1:4222", "nats://127.0.0.1:4222/a.b", "http://h/S", "nats://u:p@h/S"])
def test_a_bad_url_is_a_type_error(url):
    from fgraph.bridges.sync.adapters import nats as sync_nats
    from fgraph.core.errors import ValueTypeError
    with pytest.raises(ValueTypeError):
        sync_nats.parse_url(url)


def test_the_credentials_are_read_from_the_settings_only():
    from fgraph.bridges.sync.adapters import nats as sync_nats
    environ = {"FGRAPH_NATS_USER": "ada", "FGRAPH_NATS_PASSWORD": "pw", "FGRAPH_NATS_CREDS": "", "OTHER": "x"}
    assert sync_nats.auth(environ) == {"user": "ada", "password": "pw"}
    assert {row.name for row in sync_nats.SETTINGS} == {"FGRAPH_NATS_CREDS", "FGRAPH_NATS_USER", "FGRAPH_NATS_PASSWORD",
                                                        "FGRAPH_NATS_TOKEN", "FGRAPH_NATS_CA"}


# ----------------------------------------------------------------- a 3-node cluster, an R3 stream

def cluster(tmp: Path) -> list[NatsServer]:
    """Three JetStream servers on loopback routed to each other (cluster name ``fgraph``)."""
    routes = [free_port() for _ in range(3)]
    nodes = []
    for i in range(3):
        root = tmp / f"node{i}"
        root.mkdir()
        others = ",".join(f"nats://127.0.0.1:{p}" for j, p in enumerate(routes) if j != i)
        nodes.append(NatsServer(root, "-n", f"n{i}", "--cluster_name", "fgraph",
                                "--cluster", f"nats://127.0.0.1:{routes[i]}", "--routes", others))
    for node in nodes:
        node.start()
    return nodes


@needs_server
def test_an_r3_stream_on_a_3_node_cluster_survives_a_node_killed_mid_run(tmp_path):
    nodes = cluster(tmp_path)
    try:
        write_sources(tmp_path, 150)
        url = f"{nodes[0].url}/R3"
        deadline = time.monotonic() + 60
        while True:   # the cluster elects its meta leader first: until then JetStream answers 503
            made = cli("sync", "--from", "a.db", "--to", url, "--create-stream", "--replicas", "3", cwd=tmp_path,
                       check=False)
            if made.returncode == 0:
                break
            assert time.monotonic() < deadline, made.stderr.decode()
            time.sleep(0.5)
        procs = [subprocess.Popen([FGRAPH, "--json", "sync", *[a for n in SOURCES for a in ("--from", f"{n}.db")],
                                   "--to", url, "--follow", "--batch-size", "10", "--interval", "0.05"],
                                  cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env()),
                 subprocess.Popen([FGRAPH, "--json", "sync", "--from", f"{nodes[1].url}/R3", "--to", "central.db",
                                   "--follow", "--batch-size", "10", "--interval", "0.05", "--ack-wait", "2"],
                                  cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env())]
        try:
            wait_for(lambda: 160 < count(tmp_path / "central.db"), 60, "the first events to arrive")
            nodes[0].stop(signal.SIGKILL)                 # the node the publisher is connected to
            write_sources(tmp_path, 30, first=150)        # so both must work through the surviving nodes
            wait_for(lambda: count(tmp_path / "central.db") >= 540, 120, "every event after the node died")
        finally:
            outs = stop_following(procs)
        assert_ended_cleanly(procs, outs)
        assert_fan_in(tmp_path)
        assert consume(tmp_path, f"{nodes[2].url}/R3", "other.db")["applied"] == 540
    finally:
        for node in nodes:
            node.stop()
