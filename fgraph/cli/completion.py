"""What shell completion offers for arguments and options that click otherwise sees as plain
text (issue 31 item 4): file names for every path, and the known words of an option whose value
the library checks itself (``datoms`` indexes, ``datoms --source``, ``declare --type``), and
``@`` + a file name where DATA, QUERY or SRC reads ``@file``.

Completion only. The types convert exactly as click's STRING does and keep its name (so the
metavars of ``--help`` stay ``TEXT``), so what a command accepts and every message it prints stay
as they were: the project refuses FIFOs, directories and symlinked sidecars itself, and a word
list here never becomes a ``click.Choice``. A path completes as click's ``click.Path`` does,
with a ``file`` item that tells the shell script to fall back to the shell's own file-name
completion (``compopt -o default`` in bash). tests/cli/test_cli_completion.py drives a real bash.
"""

from __future__ import annotations

import os

import click

#: what the library accepts (fgraph.query.datoms.INDEXES, its sources, fgraph.core.values.LOGICAL_TYPES);
#: spelled out so that ``--help`` imports no engine; tests/cli/test_cli_completion.py compares
DATOMS_INDEXES = ("eavt", "avet", "vaet")
DATOMS_SOURCES = ("current", "history")
VALUE_TYPES = ("bool", "bytes", "float", "instant", "int", "json", "ref", "text", "vector")


class FilePath(click.types.StringParamType):
    """A path (or ``-`` where the command reads stdin): the shell completes file names."""

    def shell_complete(self, ctx, param, incomplete):
        from click.shell_completion import CompletionItem  # only when completing
        return [CompletionItem(incomplete, type="file")]


class Words(click.types.StringParamType):
    """Text the library checks; completion offers ``words`` that start with what is typed."""

    def __init__(self, *words: str):
        self.words = words

    def shell_complete(self, ctx, param, incomplete):
        from click.shell_completion import CompletionItem
        return [CompletionItem(word) for word in self.words if word.startswith(incomplete)]


class DataText(click.types.StringParamType):
    """Inline JSON, ``-`` or ``@path`` (and, with ``plain_paths``, a path as it is): after ``@``,
    completion offers ``@`` + each file name that starts with what is typed.

    The names are listed here, not left to the shell: bash splits ``@sch`` into ``@`` and ``sch``
    for the completion function (``@`` is in ``COMP_WORDBREAKS``) but hands its own file-name
    completion ``@sch`` whole, which matches nothing. So while completing, a lone ``@`` leaves the
    argument unfilled and the word after it is completed as the rest of ``@path``; zsh and fish
    keep ``@sch`` one word."""

    def __init__(self, plain_paths: bool = False):
        self.plain_paths = plain_paths

    def convert(self, value, param, ctx):
        if ctx is not None and ctx.resilient_parsing and value == "@" and param is not None:  # completing
            ctx.meta[_AFTER_AT] = True
            ctx.set_parameter_source(param.name, click.core.ParameterSource.DEFAULT)  # so still to complete
            return None
        return super().convert(value, param, ctx)

    def shell_complete(self, ctx, param, incomplete):
        from click.shell_completion import CompletionItem
        if incomplete.startswith("@") or ctx.meta.get(_AFTER_AT):
            import glob
            rest = incomplete[1:] if incomplete.startswith("@") else incomplete
            return [CompletionItem("@" + name + ("/" if os.path.isdir(name) else ""))
                    for name in sorted(glob.glob(glob.escape(rest) + "*"))]
        return [CompletionItem(incomplete, type="file")] if self.plain_paths else []


_AFTER_AT = "fgraph.completion.after_at"
PATH = FilePath()
