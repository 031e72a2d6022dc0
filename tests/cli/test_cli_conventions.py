"""The conventions people expect of a CLI (issue 16 part 6): summaries that fit an 80-column
command list, an example in every ``--help`` (and each example parses), ``--help`` exiting 0,
``--json`` accepted and meaningful or a usage error, shell completion for bash/zsh/fish that
works in a real bash, and a ``docs/cli.md`` reference generated from the commands themselves."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from fgraph.cli import help as cli_help
from fgraph.cli import reference as cli_reference
from fgraph.cli.main import cli, run
from tests.support.cli import run_cli
from tests.support.paths import DOCS as DOCS_DIR, FIXTURES

FGRAPH = str(Path(sys.executable).with_name("fgraph"))
DOCS = DOCS_DIR / "cli.md"
NO_JSON_OPTION = {"tail", "snapshot", "mcp", "version", "render"}  # output already JSON lines, none, or text for diffs


def test_the_command_list_fits_80_columns_without_cuts():
    result = CliRunner().invoke(cli, ["--help"], terminal_width=80)
    assert result.exit_code == 0
    listing = result.output.split("Commands:\n", 1)[1].strip().split("\n")
    assert len(listing) == len(cli.commands)
    for line in listing:
        name, summary = line.split(None, 1)
        assert len(line) <= 80 and not summary.endswith("..."), line
        assert summary == cli_help.SUMMARIES[name]
    assert set(cli_help.SUMMARIES) == set(cli.commands)  # no summary for a command that does not exist


def test_each_command_is_loaded_from_the_module_the_group_names():
    """The group loads a command's module only when the command is asked for (issue 26 item 3):
    its table of homes must name the module that really defines each command."""
    import inspect

    from fgraph.cli import base as cli_base
    homes = {name: inspect.getmodule(command.callback).__name__ for name, command in cli.commands.items()}
    assert homes == {name: cli_base.COMMAND_HOMES.get(name, cli_base.MAIN_MODULE) for name in homes}
    for name in homes:  # a fresh interpreter finds every command by its name alone
        probe = f"from fgraph.cli.base import cli; import sys; sys.exit(cli.get_command(None, {name!r}) is None)"
        assert subprocess.run([sys.executable, "-c", probe]).returncode == 0, name


@pytest.mark.parametrize("name", sorted(cli.commands))
def test_every_help_exits_0_with_an_example_that_parses(name):
    result = CliRunner().invoke(cli, [name, "--help"], terminal_width=80)
    assert result.exit_code == 0 and "Example" in result.output, result.output
    example = cli_reference.example_of(cli.commands[name])
    words = shlex.split(example)
    assert words[0] == "fgraph"
    if words[-2:-1] == [">"]:
        words = words[:-2]  # a shell redirection, not an argument
    cli.make_context("fgraph", words[1:], resilient_parsing=False)  # raises UsageError if it does not parse


@pytest.mark.parametrize("name", sorted(cli.commands))
def test_json_after_the_command_is_accepted_exactly_where_it_means_something(name):
    has_json = any("--json" in param.opts for param in cli.commands[name].params if isinstance(param, click.Option))
    assert has_json == (name not in NO_JSON_OPTION)
    if not has_json:
        with CliRunner().isolation() as (_, err, _):
            assert run([name, "--json"]) == 2
        assert "No such option" in err.getvalue().decode()


def test_json_output_is_one_canonical_line(tmp_path):
    db = str(tmp_path / "j.db")
    fixture = FIXTURES / "import" / "decisions.clean.jsonl"

    def one_line(*args):
        proc = run_cli(*args, "--json", db=db, timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.count("\n") == 1 and json.loads(proc.stdout) is not None, proc.stdout
        return json.loads(proc.stdout)

    one_line("import", "jsonl-log", str(fixture))
    assert one_line("info")["latest_tx"] > 64
    one_line("context")
    one_line("get", "fgraph")
    one_line("doctor")
    one_line("history", "fgraph")
    one_line("diff", "64", "0s")


def test_the_group_json_flag_is_accepted_before_every_command(tmp_path):
    db = str(tmp_path / "g.db")
    assert subprocess.run([FGRAPH, "--db", db, "init"], capture_output=True).returncode == 0
    for args in (["tail"], ["snapshot"], ["version"]):
        assert subprocess.run([FGRAPH, "--json", "--db", db, *args], capture_output=True).returncode == 0


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts(shell):
    proc = subprocess.run([FGRAPH, "--show-completion", shell], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "_FGRAPH_COMPLETE" in proc.stdout and "_fgraph_completion" in proc.stdout


def test_bash_completes_commands_and_choices_for_real():
    script = (f'eval "$({FGRAPH} --show-completion bash)"; PATH={Path(FGRAPH).parent}:$PATH; '
              'COMP_WORDS=(fgraph rest); COMP_CWORD=1; _fgraph_completion fgraph; echo "${COMPREPLY[*]}"; '
              'COMPREPLY=(); COMP_WORDS=(fgraph import ""); COMP_CWORD=2; _fgraph_completion fgraph; echo "${COMPREPLY[*]}"')
    proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)
    first, second = proc.stdout.strip().split("\n")
    assert first.split() == ["restore", "restore-backup"]
    assert second.split() == ["mcp-memory", "jsonl-log"]


def test_docs_cli_md_reference_is_generated_from_the_commands():
    text = DOCS.read_text(encoding="utf-8")
    assert cli_reference.spliced(text, cli_reference.render(cli)) == text, \
        "docs/cli.md is stale: run python -m fgraph.cli.reference --write docs/cli.md"
    for name in cli.commands:
        assert f"### `{name}`" in text
