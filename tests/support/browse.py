"""What the tests of ``fgraph browse`` share: the store they serve, the server started on a free
loopback port and stopped, the CLI run in a child process, and Datasette's pages fetched and read
as rows."""

from __future__ import annotations

import html.parser
import os
import select
import signal
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import fgraph
from tests.support.cli import CliResult, run_cli

CLI = [sys.executable, "-m", "fgraph.cli.main"]
START_TIMEOUT = 60   # seconds for the server to print its URL (Datasette imports take a while on a busy machine)


def browse_env() -> dict:
    """This process's environment without any FGRAPH_* setting."""
    return {k: v for k, v in os.environ.items() if not k.startswith("FGRAPH_")}


def cli(*args: str, code: str | None = None) -> CliResult:
    """``fgraph ARGS`` (``python -c CODE ARGS`` with ``code``) through ``run_cli``, in ``browse_env()``."""
    return run_cli(*args, executable=CLI if code is None else [sys.executable, "-c", code], env=browse_env())


def build_store(path: Path) -> dict:
    """Several entities, a ref, an instant, a retraction, by/source: the reports by name."""
    with fgraph.connect(str(path)) as db:
        reports = {"declare": db.declare("person/friend", type="ref")}
        reports["ada"] = db.transact({"id": "ada", "person/name": "Ada Lovelace", "person/born": 1815},
                                     by="ada-importer", source="notes/ada.md")
        reports["charles"] = db.transact({"id": "charles", "person/name": "Charles Babbage",
                                          "person/friend": {"ref": "ada"},
                                          "person/seen": {"instant": "2026-01-02T03:04:05.5Z"}})
        reports["retract"] = db.transact(["retract", "ada", "person/born", 1815], by="editor")
        reports["born"] = db.transact({"id": "ada", "person/born": 1816})
    return reports


def start_browse(path: Path, *extra: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([*CLI, "--db", str(path), "browse", "--port", "0", *extra], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=browse_env())
    ready, _, _ = select.select([proc.stdout], [], [], START_TIMEOUT)
    line = proc.stdout.readline().strip() if ready else ""
    if not line.startswith("http://"):
        stop(proc)
        raise AssertionError(f"browse printed no URL: {line!r}; stderr: {proc.stderr.read()[-2000:]}")
    return proc, line


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)  # uvicorn's graceful shutdown
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


def fetch(url: str, method: str = "GET", body: bytes | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, data=body, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode("utf-8")
    except urllib.error.HTTPError as error:
        with error:
            return error.code, error.read().decode("utf-8", "replace")


class Rows(html.parser.HTMLParser):
    """The rows of Datasette's results table: per row, column → (text, href of its first link)."""

    def __init__(self):
        super().__init__()
        self.rows: list[dict] = []
        self.in_body = False
        self.cell: str | None = None
        self.text, self.href = "", None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "tbody":
            self.in_body = True
        elif tag == "tr" and self.in_body:
            self.rows.append({})
        elif tag == "td" and self.in_body:
            self.cell = (attrs.get("class") or "").removeprefix("col-")
            self.text, self.href = "", None
        elif tag == "a" and self.cell is not None and self.href is None:
            self.href = attrs.get("href")

    def handle_endtag(self, tag):
        if tag == "tbody":
            self.in_body = False
        elif tag == "td" and self.cell is not None:
            self.rows[-1][self.cell] = (self.text.strip().replace("\xa0", ""), self.href)
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.text += data


def page(site, query: str, **params) -> list[dict]:
    """The rows of canned query ``query`` on ``site`` (anything with the served ``url``)."""
    return rows_at(f"{site.url}/{query}?{urllib.parse.urlencode(params)}")


def rows_at(url: str) -> list[dict]:
    status, text = fetch(url)
    assert status == 200, text[-2000:]
    parser = Rows()
    parser.feed(text)
    return parser.rows


def texts(rows: list[dict], *columns: str) -> list[tuple]:
    return [tuple(row[c][0] for c in columns) for row in rows]
