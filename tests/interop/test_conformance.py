"""The conformance corpus (spec 11) on every runtime we can reach.

Parametrised over case file x adapter:

- ``lib``  — this project's library in-process (``fgraph.connect``);
- ``cli``  — this project's ``fgraph`` executable;
- ``peer`` — the executable named by ``FGRAPH_PEER`` (e.g. ``../shared/tools/refpeer``),
  only when that variable is set; marked ``peer``. Cases under
  ``conformance/cases/divergent/`` record where we knowingly differ from the
  published runtime and do not run on the peer.

Cases: ``conformance/cases/**.json`` (ids ``project/<area>/<name>[adapter]``) and,
when the shared folder exists next to the repository,
``../shared/fixtures/upstream/cases/**.json`` (ids ``upstream/<area>/<name>[adapter]``).

CLI cases spend their time in subprocesses, so the selected CLI items are run
ahead on a small thread pool (``FGRAPH_CONFORMANCE_JOBS``, default: CPU count,
at most 8; ``1`` disables it) and each test reports its own outcome.
See docs/conformance.md.
"""

from __future__ import annotations
from tests.support.paths import REPO

import collections
import concurrent.futures
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = REPO
OWN_CASES = ROOT / "conformance" / "cases"
UPSTREAM_CASES = ROOT.parent / "shared" / "fixtures" / "upstream" / "cases"
DIVERGENT = "divergent"
CLI_KINDS = ("cli", "peer")

#: Cases whose expectations come from the published runtime and that this runtime
#: does not meet yet (test id -> what differs). They are xfail(strict=True): the
#: day the runtime is fixed the item XPASSes, which fails, and the entry must go.
#: Library code is not changed from here; see docs/conformance.md.
KNOWN_DIVERGENCES: dict[str, str] = {}  # test id -> why our runtime knowingly differs (none at present)


def _load_runner():
    name = "fgraph_conformance_runner"
    if name in sys.modules:
        return sys.modules[name]
    package = ROOT / "conformance" / "runner"
    spec = importlib.util.spec_from_file_location(
        name, package / "__init__.py", submodule_search_locations=[str(package)])
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


runner = _load_runner()


def _collect() -> list:
    adapters = ["lib", "cli"]
    if os.environ.get("FGRAPH_PEER"):
        adapters.append("peer")
    params = []
    for corpus, base in (("project", OWN_CASES), ("upstream", UPSTREAM_CASES)):
        for path in runner.case_files(base):
            rel = path.relative_to(base).with_suffix("").as_posix()
            for kind in adapters:
                marks = [pytest.mark.peer] if kind == "peer" else []
                test_id = f"{corpus}/{rel}[{kind}]"
                if test_id in KNOWN_DIVERGENCES:
                    marks.append(pytest.mark.xfail(strict=True, reason=KNOWN_DIVERGENCES[test_id]))
                params.append(pytest.param(corpus, rel, path, kind, marks=marks, id=test_id))
    return params


# ---- adapters

def _our_library():
    import fgraph

    return runner.LibraryAdapter(fgraph, label="lib")


def _our_executable() -> str:
    candidate = Path(sys.executable).parent / "fgraph"
    if candidate.exists():
        return str(candidate)
    found = shutil.which("fgraph")
    if not found:
        pytest.fail("no fgraph executable next to the interpreter or on PATH: run `make venv`")
    return found


def _adapter(corpus: str, rel: str, kind: str, case: dict[str, Any] | None = None):
    """The adapter for one test, or pytest.skip when it cannot run here."""
    if kind == "lib":
        return _our_library()
    if kind == "cli":
        # the corpus holds the published output; ours prints it for NDJSON with --reports (decision A3)
        # and for excise with --published-receipt (decision F6 in docs/forgetting.md)
        return runner.CliAdapter(_our_executable(), label="cli", add_options=("--reports",),
                                 excise_options=("--published-receipt",))
    if corpus == "project" and rel.split("/", 1)[0] == DIVERGENT:
        pytest.skip("divergent case: records where this runtime knowingly differs from the peer")
    return runner.CliAdapter(os.environ["FGRAPH_PEER"], label="peer")


#: checked and total steps per adapter label, printed at the end of the session (tests/conftest.py)
CHECKED_STEPS: collections.Counter = collections.Counter()
TOTAL_STEPS: collections.Counter = collections.Counter()


def _count_steps(steps) -> int:
    return sum(1 + _count_steps(step.get("steps", [])) for step in steps if isinstance(step, dict))


def _outcome(case: dict[str, Any], adapter) -> tuple[str, str]:
    """Run a case: ("pass", ""), ("skip", reason) or ("fail", message)."""
    TOTAL_STEPS[adapter.label] += _count_steps(case.get("steps", []))
    try:
        report = runner.run_case(case, adapter)
    except runner.CaseSkipped as exc:
        return "skip", str(exc)
    except runner.CaseFailure as exc:
        return "fail", str(exc)
    CHECKED_STEPS[adapter.label] += report.ran
    return "pass", ""


def _prepare(path: Path, corpus: str, rel: str, kind: str):
    """Load the case and its adapter; pytest.skip for subset cases and absent runtimes."""
    case = runner.load_case(path)
    reason = runner.subset_skip_reason(case)
    if reason:
        pytest.skip(reason)
    return case, _adapter(corpus, rel, kind, case)


# ---- parallel prefetch of CLI items

class _Prefetch:
    def __init__(self, items: list[pytest.Item]):
        self.futures: dict[str, concurrent.futures.Future] = {}
        self.pool: concurrent.futures.ThreadPoolExecutor | None = None
        jobs = int(os.environ.get("FGRAPH_CONFORMANCE_JOBS") or min(8, os.cpu_count() or 1))
        if jobs <= 1:
            return
        work = []
        for item in items:
            callspec = getattr(item, "callspec", None)
            if callspec is None or callspec.params.get("kind") not in CLI_KINDS:
                continue
            params = callspec.params
            try:
                case, adapter = _prepare(params["path"], params["corpus"], params["rel"],
                                         params["kind"])
            except BaseException:  # noqa: BLE001 - skips/errors surface in the test itself
                continue
            work.append((item.nodeid, case, adapter))
        if len(work) < 2:
            return
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=jobs,
                                                          thread_name_prefix="conformance")
        for nodeid, case, adapter in work:
            self.futures[nodeid] = self.pool.submit(_outcome, case, adapter)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)


@pytest.fixture(scope="session")
def cli_prefetch(request: pytest.FixtureRequest):
    prefetch = _Prefetch(list(request.session.items))
    yield prefetch
    prefetch.close()


# ---- tests

@pytest.mark.parametrize(("corpus", "rel", "path", "kind"), _collect())
def test_case(corpus: str, rel: str, path: Path, kind: str, request: pytest.FixtureRequest) -> None:
    future = None
    if kind in CLI_KINDS:
        future = request.getfixturevalue("cli_prefetch").futures.get(request.node.nodeid)
    if future is not None:
        status, message = future.result()
    else:
        case, adapter = _prepare(path, corpus, rel, kind)
        status, message = _outcome(case, adapter)
    if status == "skip":
        pytest.skip(message)
    if status == "fail":
        pytest.fail(f"{corpus}/{rel} on {kind}: {message}", pytrace=False)


def test_own_cases_are_well_formed() -> None:
    """Every project case loads strictly, is named after its path and says what it pins."""
    problems = []
    files = runner.case_files(OWN_CASES)
    assert files, "no project cases found"
    for path in files:
        try:
            case = runner.load_case(path)
        except Exception as exc:  # noqa: BLE001
            problems.append(f"{path}: {exc}")
            continue
        rel = path.relative_to(OWN_CASES).with_suffix("").as_posix()
        if case.get("name") != rel:
            problems.append(f"{path}: name should be {rel!r}")
        if not case.get("comment"):
            problems.append(f"{path}: missing comment")
    assert not problems, "\n".join(problems)


# ---- the runner itself

@pytest.mark.parametrize(("expected", "actual", "ok"), [
    ({"a": 1}, {"a": 1}, True),
    ({"a": 1}, {"a": 1, "b": 2}, False),
    ({"a": 1, "...": True}, {"a": 1, "b": 2}, True),
    ({"a": {"x": 1}, "...": True}, {"a": {"x": 1, "y": 2}}, False),
    ({"a": 1, "...": True}, {"b": 1}, False),
    ([1, 2], [1, 2, 3], False),
    ([1, 2], [2, 1], False),
    ([{"a": 1, "...": True}], [{"a": 1, "b": 2}], True),
    (0, 0.0, True),
    (0, -0.0, True),
    (1.5, 1.5, True),
    (True, 1, False),
    (1, True, False),
    (False, 0, False),
    (None, None, True),
    (None, 0, False),
    ("1", 1, False),
    (9007199254740993, 9007199254740992.0, False),
    ({"a": None}, {}, False),
])
def test_matcher(expected, actual, ok) -> None:
    assert (runner.match(expected, actual) == []) is ok


def test_subset_rule(monkeypatch) -> None:
    """Every write of 11 §2 runs now (shape and schema_apply included); the rule still skips a
    whole case for any later write, nested ones too."""
    case = {"steps": [{"at": 66, "steps": [{"shape": {"name": "s/x"}}]}]}
    assert runner.subset_skip_reason(case) is None and not runner.LATER_WRITES
    monkeypatch.setattr(runner.cases, "LATER_WRITES", frozenset({"shape"}))
    assert runner.subset_skip_reason(case)
    assert runner.subset_skip_reason({"steps": [{"q": {}, "expect": {}}]}) is None


@pytest.mark.parametrize("text", [
    '{"steps": [{"tx": {}, "tx": {}}]}',
    '{"steps": [{"tx": NaN}]}',
    '{"steps": [{"tx": {}, "expect": {}, "error": "Conflict"}]}',
    '{"steps": [{"tx": {}, "error": "Oops"}]}',
    '{"steps": [{"entity": "a", "options": {}}]}',
    '{"steps": [{"tx": {}, "entity": "a"}]}',
    '{"steps": [], "extra": 1}',
    '{"steps": [{"events": {"since": 64, "until": 65}}]}',
    '{"steps": [{"events": 64}]}',
    '{"steps": [{"apply": {"fgraph": "event/1"}}]}',
    '{"steps": [{"apply": [1]}]}',
    '{"steps": [{"apply": ["{}\\n{}"]}]}',
    '{"steps": [{"apply": [{"n": 1e400}]}]}',
    '{"steps": [{"apply": [], "options": {}}]}',
])
def test_malformed_cases_are_rejected(text: str) -> None:
    with pytest.raises(runner.CaseFormatError):
        runner.validate_case(runner.loads_strict(text))


@pytest.mark.parametrize("text", [
    '{"steps": [{"snapshot": {"at": 70}}]}',
    '{"steps": [{"snapshot": []}]}',
    '{"steps": [{"restore": {"fgraph": "snapshot/1"}}]}',
    '{"steps": [{"restore": ["a\\nb"]}]}',
    '{"steps": [{"excise": "a"}]}',
    '{"steps": [{"excise": {"operation_id": "x"}}]}',
    '{"steps": [{"excise": {"ref": "a", "by": "me"}}]}',
])
def test_malformed_snapshot_and_history_steps_are_rejected(text: str) -> None:
    with pytest.raises(runner.CaseFormatError):
        runner.validate_case(runner.loads_strict(text))


def test_snapshot_and_history_steps_are_valid() -> None:
    runner.validate_case({"steps": [
        {"snapshot": {}, "expect": []}, {"at": 65, "steps": [{"snapshot": {}}]},
        {"restore": [{"fgraph": "snapshot/1"}, "", " raw"], "error": "TypeError"},
        {"excise": {"ref": "a"}}, {"excise": {"ref": 65, "operation_id": "x", "if_basis_tx": 66}},
    ]})
    assert {"restore", "excise"} <= runner.WRITE_ACTIONS and "snapshot" not in runner.WRITE_ACTIONS


def test_seal_matches_the_pristine_digest() -> None:
    header = {"basis": "00000000-0000-4000-8000-000000000040", "created_at": 1767225600000000,
              "fgraph": "snapshot/1", "format": 2}
    assert runner.seal([header]) == [header, {
        "facts": 0, "fgraph": "end", "receipts": 0,
        "sha256": "cb923270289361b4f60cdc1a78988a6b210e518f1b44c845fd13fdde383847ae"}]


def test_excise_adapters_drop_scrub_and_need_both_cli_options() -> None:
    assert runner.excise_report({"status": "applied", "scrub": {"pages": 3}}) == {"status": "applied"}

    def excise_args(value):
        return runner.excise_command(value, {"excise": value}, None, None).args

    with pytest.raises(runner.NotExpressible):
        excise_args({"ref": "a", "operation_id": "x"})
    with pytest.raises(runner.NotExpressible):
        excise_args({"ref": "a", "if_basis_tx": 66})
    assert excise_args({"ref": "-a", "operation_id": "x", "if_basis_tx": 66}) == [
        "excise", "--operation-id=x", "--if-basis-tx=66", "--", "-a"]


def test_case_json_round_trip() -> None:
    value = {"b": [1, 1.0, -0.0, 1e400, -1e400, 1e-7], "a": "\x00\x7f\x85\u2028\ud800é"}
    text = runner.dumps_json(value)
    assert "1e400" in text and "\\ud800" in text
    assert runner.loads_strict(text) == value


# ---- stream actions (project extension: events, apply)

def test_stream_steps_are_valid() -> None:
    runner.validate_case({"steps": [
        {"events": {}}, {"events": {"since": 65, "through": 70}, "expect": []},
        {"events": {"since": True}, "error": "TypeError"},
        {"apply": []}, {"apply": [{"fgraph": "event/1"}, "  raw line \u2028", ""], "error": "TypeError"},
    ]})
    assert "apply" in runner.WRITE_ACTIONS and "events" not in runner.WRITE_ACTIONS


@pytest.mark.parametrize(("value", "text"), [
    ({"b": 1.0, "a": [-0.0, 1e-7, 1e-6, 1e20, 1e21, 1250.0, 2.0**63, 0.1]},
     '{"a":[0,1e-7,0.000001,1e+20,1e+21,1250,9.223372036854776e+18,0.1],"b":1}'),
    ({"\ue000": 1, "\U0001f600": 2, "z": None, "t": True}, '{"t":true,"z":null,"\ue000":1,"\U0001f600":2}'),
    ("a\u2028\x00\x1f\x7f\x85\"\\/\n\r\t\b\f", '"a\u2028\\u0000\\u001f\x7f\x85\\"\\\\/\\n\\r\\t\\b\\f"'),
    (-(2**63), "-9223372036854775808"),
])
def test_canonical_dumps(value, text) -> None:
    assert runner.canonical_dumps(value) == text


@pytest.mark.parametrize("value", [2**63, float("nan"), float("inf"), "\ud800", {1: 2}, b"x"])
def test_canonical_dumps_refuses(value) -> None:
    with pytest.raises(runner.CaseFormatError):
        runner.canonical_dumps(value)


def test_canonical_dumps_equals_our_encoder() -> None:
    import random

    from fgraph.core import canonical

    rng = random.Random(7)
    values = [rng.uniform(-1, 1) * 10 ** rng.randint(-30, 30) for _ in range(3000)]
    values += [float(rng.randint(-2**64, 2**64)) for _ in range(500)]
    for value in values + [{"k": values[:50], "s": "\u2028é\x00"}]:
        ours = canonical.dumps(value)
        assert runner.canonical_dumps(value) == (ours.decode() if isinstance(ours, bytes) else ours)


def test_stream_text_and_parse() -> None:
    record = {"fgraph": "event/1", "at": 1, "s": "a\u2028b"}
    text = runner.stream_text([record, "  {\"x\": 1} \r", ""])
    assert text == '{"at":1,"fgraph":"event/1","s":"a\u2028b"}\n  {"x": 1} \r\n\n'
    assert runner.stream_text([]) == ""
    assert runner.parse_ndjson(runner.stream_text([record, record])) == [record, record]
    assert runner.parse_ndjson("") == []
    for bad in ('{"a":1}', '{"b":1,"a":2}\n', '{"a":1.0}\n', '{"a": 1}\n', '{"a":1}\n\n'):
        with pytest.raises(ValueError):
            runner.parse_ndjson(bad)


# ---- the published library (11 §2.5: the same runner drives fgraph 1.2.0 in-process)

def _peer_python() -> str | None:
    """The peer's Python (``$FGRAPH_PEER --python``, as refpeer offers), or None."""
    peer = os.environ.get("FGRAPH_PEER")
    if not peer:
        return None
    try:
        proc = subprocess.run([peer, "--python"], capture_output=True, text=True, timeout=300, check=False)
    except OSError:
        return None
    python = proc.stdout.strip()
    return python if proc.returncode == 0 and python and os.path.exists(python) else None


@pytest.mark.peer
def test_corpus_on_published_library() -> None:
    """Every case, stream cases included, also passes on the peer's library (derive.py --check;
    divergent cases are skipped there). Needs an FGRAPH_PEER that answers ``--python``."""
    python = _peer_python()
    if python is None:
        pytest.skip("FGRAPH_PEER is unset or offers no --python")
    paths = [str(OWN_CASES)] + ([str(UPSTREAM_CASES)] if UPSTREAM_CASES.is_dir() else [])
    proc = subprocess.run([python, str(ROOT / "conformance" / "derive.py"), "--check", *paths],
                          capture_output=True, text=True, timeout=600, check=False)
    failures = [line for line in proc.stdout.splitlines() if line.startswith("FAIL")]
    assert proc.returncode == 0 and not failures, "\n".join(failures) or proc.stdout[-3000:] + proc.stderr[-3000:]
