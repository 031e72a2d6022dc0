"""The command reference at the end of ``docs/cli.md``, generated from the click commands so that
it cannot drift from them (``tests/cli/test_cli_conventions.py`` regenerates and compares).

    python -m fgraph.cli.reference --write docs/cli.md
"""

from __future__ import annotations

import sys

import click

from fgraph.core.docblocks import DocBlock

BEGIN = "<!-- BEGIN GENERATED REFERENCE: python -m fgraph.cli.reference --write docs/cli.md -->"
END = "<!-- END GENERATED REFERENCE -->"
BLOCK = DocBlock(BEGIN, END)
spliced = BLOCK.spliced   # docs/cli.md with the reference between the markers replaced


def render(group: click.Group) -> str:
    """Markdown for every command: summary, usage, options, example."""
    out = ["## Command reference", "",
           "Generated from the commands themselves; `fgraph COMMAND --help` prints the same.", ""]
    context = click.Context(group, info_name="fgraph")
    for name in sorted(group.commands):
        _section(out, name, group.commands[name], context)
    return "\n".join(out).rstrip("\n") + "\n"


def _section(out: list[str], name: str, command: click.Command, context: click.Context) -> None:
    """One command's section; a group's (``proposals``) is followed by one per subcommand."""
    sub = click.Context(command, info_name=name, parent=context)
    summary = command.short_help or command.get_short_help_str(limit=200)
    out += [f"### `{name}`", "", summary, "", "```",
            f"fgraph {name} {' '.join(command.collect_usage_pieces(sub))}".rstrip(), "```", ""]
    description = _description(command)
    if description:
        out += [description, ""]
    rows = [param.get_help_record(sub) for param in command.get_params(sub)
            if isinstance(param, click.Option) and "--help" not in param.opts]
    rows = [row for row in rows if row is not None]
    if rows:
        out += ["| option | meaning |", "|---|---|"]
        out += [f"| `{_cell(flags)}` | {_cell(text)} |" for flags, text in rows]
        out.append("")
    example = example_of(command)
    if example:
        out += ["Example:", "", "```", example, "```", ""]
    if isinstance(command, click.Group):
        for child in sorted(command.commands):
            _section(out, f"{name} {child}", command.commands[child], context)


def _description(command: click.Command) -> str:
    """The help text after its first line, without the example (shown on its own)."""
    lines = [line for line in (command.help or "").strip().split("\n")[1:]
             if line.strip() != "\b" and not line.strip().startswith("Example")]
    text = "\n".join(line.strip() for line in lines).strip()
    return text


def example_of(command: click.Command) -> str | None:
    for text in (command.help or "", command.epilog or ""):
        lines = [line.strip() for line in text.split("\n")]
        for index, line in enumerate(lines):
            if line.startswith("Example:"):
                rest = line[len("Example:"):].strip()
                return rest or (lines[index + 1] if index + 1 < len(lines) else None)
    return None


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def main(argv: list[str] | None = None) -> int:
    from fgraph.cli.main import cli
    return BLOCK.main(argv, lambda: render(cli), what="the generated CLI reference")


if __name__ == "__main__":
    sys.exit(main())
