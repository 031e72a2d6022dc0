"""Regressions of issue 15's defects, through the real CLI on real files: every SQLite failure of the
environment is a typed error with a hint, special files are refused before SQLite sees them, input is
bounded while it is read, and messages name the actual problem."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

FGRAPH = os.path.join(os.path.dirname(sys.executable), "fgraph")
FSIZE_LIMIT = 300 * 1024   # bytes a writer may grow files to under `ulimit -f`


_MEASURED = """
import resource, subprocess, sys
limit = int(sys.argv[1])
if limit:
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
code = subprocess.run(sys.argv[3:]).returncode
with open(sys.argv[2], "w") as report:
    report.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
sys.exit(code)
"""


def run(*args, stdin=None, timeout=60, limit_file_size=None):
    """Run the CLI in a fresh wrapper process; (exit code, stdout, stderr, the CLI's own peak RSS in KiB)."""
    import tempfile
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as report:
        proc = subprocess.run([sys.executable, "-c", _MEASURED, str(limit_file_size or 0), report.name, FGRAPH, *args],
                              input=stdin, capture_output=True, timeout=timeout)
        peak = int(report.read() or 0)
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode(), peak


def assert_typed(result, name: str, *fragments: str):
    code, out, err, _ = result
    assert code == 1, (code, err)
    assert out == ""
    assert err.startswith(f"{name}: "), err
    assert "internal error" not in err and "Traceback" not in err
    for fragment in fragments:
        assert fragment in err, err


@pytest.fixture
def store(tmp_path):
    """A store with 3,000 facts of 200 bytes, its event stream, snapshot and a backup of it."""
    path = tmp_path / "src.db"
    lines = "".join(json.dumps({"id": f"e{i}", "t/s": "x" * 200, "t/n": i}) + "\n" for i in range(1500))
    (tmp_path / "in.ndjson").write_text(lines)
    assert run("--db", str(path), "add", "--batch-size", "500", f"@{tmp_path / 'in.ndjson'}")[0] == 0
    for name, args in (("s.events", ("tail",)), ("s.snap", ("snapshot",))):
        code, out, _, _ = run("--db", str(path), *args)
        assert code == 0
        (tmp_path / name).write_text(out)
    assert run("--db", str(path), "backup", str(tmp_path / "b.db"))[0] == 0
    return tmp_path


# ------------------------------------------------------------- 15.3 full disks and read-only files

@pytest.mark.parametrize("command", ["restore", "apply", "add", "backup", "restore-backup"])
def test_a_full_file_size_limit_is_a_typed_error_and_nothing_is_published(store, command):
    target = store / "out.db"
    args = {"restore": ("--db", str(target), "restore", str(store / "s.snap")),
            "apply": ("--db", str(target), "apply", str(store / "s.events")),
            "add": ("--db", str(target), "add", "--batch-size", "1500", f"@{store / 'in.ndjson'}"),
            "backup": ("--db", str(store / "src.db"), "backup", str(target)),
            "restore-backup": ("restore-backup", str(store / "b.db"), str(target))}[command]
    result = run(*args, limit_file_size=FSIZE_LIMIT)
    code, _, err, _ = result
    assert code == 1 and "internal error" not in err and "not an error" not in err, err
    assert err.split(":")[0] in {"FormatError", "TooLarge"}, err
    assert any(word in err for word in ("file size limit", "free space")), err
    if command in ("backup", "restore-backup"):
        assert not target.exists()
    else:  # all or nothing: the target holds genesis only
        code, out, _, _ = run("--db", str(target), "tail")
        assert code == 0 and out == ""
        assert run("--db", str(target), "doctor", "--json")[0] == 0


def test_a_read_only_database_file_is_read_only_not_an_internal_error(store):
    path = store / "src.db"
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(path)]).returncode != 0:
        pytest.skip("chattr +i is not available (needs root and a filesystem with the immutable flag)")
    try:
        assert_typed(run("--db", str(path), "add", '{"id":"new","t/n":1}'), "ReadOnly", "read-only")
        assert run("--db", str(path), "info")[0] == 0
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


# ------------------------------------------------------------- 15.4 / 15.5 special files

@pytest.mark.parametrize("command", [("info",), ("doctor",), ("snapshot",), ("tail",), ("add", '{"id":"a","t/n":1}')])
def test_a_fifo_is_refused_at_once_instead_of_hanging(tmp_path, command):
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    assert_typed(run("--db", str(fifo), *command, timeout=20), "FormatError", "FIFO")


@pytest.mark.parametrize("device", ["/dev/null", "/dev/zero"])
def test_a_device_is_refused_and_no_sidecar_is_created_beside_it(device):
    if not os.path.exists(device):
        pytest.skip(f"{device} does not exist here")
    before = {name for name in os.listdir("/dev") if name.startswith(os.path.basename(device) + "-")}
    assert_typed(run("--db", device, "add", '{"id":"a","t/n":1}', timeout=20), "FormatError", "character device")
    assert_typed(run("--db", device, "info", timeout=20), "FormatError", "character device")
    after = {name for name in os.listdir("/dev") if name.startswith(os.path.basename(device) + "-")}
    assert after == before


def test_a_directory_and_a_fifo_sidecar_are_refused(store, tmp_path):
    assert_typed(run("--db", str(store), "info"), "FormatError", "directory")
    lonely = tmp_path / "lonely"
    lonely.mkdir()
    shutil.copy(store / "b.db", lonely / "x.db")
    os.mkfifo(lonely / "x.db-wal")
    assert_typed(run("--db", str(lonely / "x.db"), "info", timeout=20), "FormatError", "WAL file", "FIFO")


def test_proc_files_are_not_databases():
    assert_typed(run("--db", "/proc/self/status", "add", '{"id":"a","t/n":1}', timeout=20), "FormatError")


# ------------------------------------------------------------- 15.6 messages

def test_a_huge_integer_names_the_int64_limit_not_python_internals(tmp_path):
    result = run("--db", str(tmp_path / "x.db"), "add", '{"id":"a","t/n":' + "9" * 5000 + "}")
    assert_typed(result, "TypeError", "int64")
    assert "set_int_max_str_digits" not in result[2]


def test_at_without_a_file_name_says_so(tmp_path):
    assert_typed(run("--db", str(tmp_path / "x.db"), "add", "@"), "FormatError", "no input file is named after '@'")


def test_restore_backup_onto_a_symlink_names_the_link(store):
    os.symlink(store / "nowhere", store / "link.db")
    assert_typed(run("restore-backup", str(store / "b.db"), str(store / "link.db")), "Conflict", "symbolic link")
    assert not (store / "nowhere").exists()


# ------------------------------------------------------------- 15.7 bounded memory

def test_an_oversized_value_is_refused_while_reading(tmp_path):
    big = tmp_path / "big.json"
    with open(big, "w") as handle:
        handle.write('{"id":"a","t/s":"')
        for _ in range(100):
            handle.write("x" * 1_000_000)
        handle.write('"}')
    result = run("--db", str(tmp_path / "x.db"), "add", f"@{big}")
    assert_typed(result, "TooLarge")
    assert result[3] < 200 * 1024, f"peak RSS {result[3]} KiB for a 100 MB input (416 MB before the fix)"


def test_ndjson_batches_are_streamed_not_parsed_all_at_once(tmp_path):
    lines = tmp_path / "many.ndjson"
    with open(lines, "w") as handle:
        for i in range(100_000):
            handle.write(json.dumps({"id": f"e{i}", "t/n": i, "t/s": f"some text here {i}"}) + "\n")
    small = tmp_path / "small.ndjson"
    small.write_text("".join(json.dumps({"id": f"e{i}", "t/n": i}) + "\n" for i in range(2000)))
    baseline = run("--db", str(tmp_path / "a.db"), "add", "--batch-size", "1000", f"@{small}")
    large = run("--db", str(tmp_path / "b.db"), "add", "--batch-size", "1000", f"@{lines}")
    assert large[0] == 0 and json.loads(large[1])["items"] == 100_000
    # flat: the 100,000-line run may not exceed the 2,000-line one by more than a few batches' worth
    # (holding every parsed record costs ~65 MB here)
    assert large[3] - baseline[3] < 25 * 1024, (baseline[3], large[3])
