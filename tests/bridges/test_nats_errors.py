"""Every error of ``fgraph sync`` through NATS is typed (issue 48 items 1 and 4): each exception class
nats-py defines is named in the adapter's table (adapters/nats_errors.py) — a nats-py that adds one
fails here until it is — and becomes a typed fgraph error; another application's stream, a
garbage, missing or non-regular creds or CA file end in a typed error at once, never ``internal
error``, never a hang, never "server unreachable" for a missing file (URLs: test_nats_urls.py)."""

from __future__ import annotations

import inspect
import os
import time

import pytest

from fgraph.core.errors import FgraphError, FormatError, NotFound
from tests.support.nats import free_port, needs_server
from tests.support.syncing import cli, write_sources

nats = pytest.importorskip("nats", reason="no nats-py (pip install 'fgraph[nats]')")


def client_exceptions() -> list[type]:
    import nats.errors
    import nats.js.errors
    return [cls for module in (nats.errors, nats.js.errors) for _, cls in inspect.getmembers(module, inspect.isclass)
            if issubclass(cls, BaseException) and cls.__module__ == module.__name__]


def instance(cls):
    """An instance of ``cls`` whatever its constructor needs (None for each required argument)."""
    required = [p for p in inspect.signature(cls.__init__).parameters.values()
                if p.name != "self" and p.default is p.empty and p.kind is p.POSITIONAL_OR_KEYWORD]
    return cls(*[None] * len(required))


def test_every_exception_class_of_the_client_is_in_the_table_and_becomes_a_typed_error():
    from fgraph.bridges.sync.adapters import nats_errors
    from fgraph.bridges.sync.log import LogUnavailable
    classes = client_exceptions()
    assert len(classes) > 40
    missing = sorted(cls.__name__ for cls in classes if cls.__name__ not in nats_errors.MEANING)
    assert not missing, f"nats-py exceptions the adapter does not map (adapters/nats_errors.py MEANING): {missing}"
    for cls in classes:
        typed = nats_errors.translate(instance(cls), "nats://h:4222", LogUnavailable)
        assert isinstance(typed, FgraphError), cls
        assert typed.hint and "internal error" not in str(typed)


def test_the_api_answers_are_sorted_by_status():
    from nats.js.errors import APIError, NoStreamResponseError, NotFoundError, ServiceUnavailableError
    from fgraph.bridges.sync.adapters import nats_errors
    from fgraph.bridges.sync.log import LogUnavailable
    from fgraph.core.errors import Conflict

    def typed(exc):
        return nats_errors.translate(exc, "nats://h:4222", LogUnavailable)
    assert isinstance(typed(NoStreamResponseError()), LogUnavailable)       # a 503 to a publish
    assert isinstance(typed(ServiceUnavailableError(code=503, err_code=10008)), LogUnavailable)
    assert isinstance(typed(APIError(code=409, description="Leadership Change")), LogUnavailable)
    assert isinstance(typed(APIError(code=500, err_code=10005, description="no suitable peers")), LogUnavailable)
    assert isinstance(typed(APIError(code=400, err_code=10164, description="wrong last sequence")), LogUnavailable)
    assert isinstance(typed(NotFoundError(code=404, err_code=10059)), NotFound)
    assert isinstance(typed(APIError(code=400, err_code=10058, description="stream name in use")), Conflict)
    assert typed(APIError(code=400, err_code=10071, description="wrong last sequence")) is None   # the caller's
    assert typed(ValueError("not the client's")) is None


@needs_server
def test_another_applications_stream_is_a_conflict(tmp_path, server):
    import asyncio

    async def make():
        client = await nats.connect(server.url)
        await client.jetstream().add_stream(name="ORDERS", subjects=["orders.>"])
        await client.close()
    asyncio.run(make())
    write_sources(tmp_path, 1, names=("a",))
    for args in (("--from", "a.db", "--to", f"{server.url}/ORDERS"), ("--from", f"{server.url}/ORDERS", "--to", "t.db")):
        proc = cli("sync", *args, cwd=tmp_path, check=False)
        assert proc.returncode == 1
        assert proc.stderr.decode().startswith("Conflict: stream 'ORDERS' on nats://127.0.0.1:"), proc.stderr.decode()
        assert "is not fgraph's: its subjects are orders.>, not ORDERS.>" in proc.stderr.decode()


def special_files(tmp_path) -> dict:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (tmp_path / "dir").mkdir()
    return {"a FIFO": str(fifo), "a device": "/dev/zero", "a directory": str(tmp_path / "dir")}


@pytest.mark.parametrize("setting", ["FGRAPH_NATS_CREDS", "FGRAPH_NATS_CA"])
def test_a_creds_or_ca_setting_naming_no_regular_file_is_refused_at_once(tmp_path, setting):
    """Before any connection: the URL's port has no server at all."""
    write_sources(tmp_path, 1, names=("a",))
    url = f"nats://127.0.0.1:{free_port()}/S"
    cases = {**special_files(tmp_path), "missing": str(tmp_path / "nowhere.pem")}
    for what, path in cases.items():
        started = time.monotonic()
        proc = cli("sync", "--from", "a.db", "--to", url, cwd=tmp_path, check=False, extra_env={setting: path},
                   timeout=30)
        err = proc.stderr.decode()
        assert proc.returncode == 1 and time.monotonic() - started < 20, (what, err)
        assert setting in err and "unreachable" not in err and "internal error" not in err, (what, err)
        if what == "missing":
            assert err.startswith("NotFound: the ") and "does not exist" in err, err
        else:
            assert err.startswith("FormatError: ") and f"is {what}" in err and "not a regular file" in err, (what, err)


def test_a_garbage_creds_or_ca_file_is_a_format_error(tmp_path):
    from fgraph.bridges.sync.adapters import nats_tls
    garbage = tmp_path / "garbage"
    for data in (b"hello\n", b"", b"\xff\xfe" * 100, b"-----BEGIN NATS USER JWT-----\nnot.a\n"):
        garbage.write_bytes(data)
        with pytest.raises(FormatError, match="holds no user JWT and nkey seed"):
            nats_tls.read_creds(str(garbage))
        with pytest.raises(FormatError, match="holds no PEM certificate"):
            nats_tls.tls_context(str(garbage))
    with pytest.raises(NotFound, match=r"\(FGRAPH_NATS_CREDS\) does not exist"):
        nats_tls.read_creds(str(tmp_path / "none.creds"))


def test_the_cli_says_a_garbage_creds_file_is_a_format_error(tmp_path):
    write_sources(tmp_path, 1, names=("a",))
    (tmp_path / "bad.creds").write_text("-----BEGIN NATS USER JWT-----\n")
    proc = cli("sync", "--from", "a.db", "--to", f"nats://127.0.0.1:{free_port()}/S", cwd=tmp_path, check=False,
               extra_env={"FGRAPH_NATS_CREDS": str(tmp_path / "bad.creds")}, timeout=30)
    assert proc.returncode == 1 and proc.stderr.decode().startswith("FormatError: the NATS creds file "), proc.stderr
