"""The one-line summary and an example of every command, kept in one place so that the command
list fits an 80-column terminal without "…" (click cuts a summary longer than the room left
beside the longest command name), every ``--help`` shows how to call the command, and
``docs/cli.md``'s generated reference (``python -m fgraph.cli.reference``) says the same.

``apply_conventions`` is applied by the ``cli`` group to each command as it hands it out.
"""

from __future__ import annotations

import click

SUMMARY_WIDTH = 56  # 80 columns - 2 indent - 16 for "restore-backup" and its gap - slack

SUMMARIES = {
    "add": "Write facts: JSON, NDJSON, @file or - for stdin.",
    "apply": "Merge an event/1 stream, all or nothing.",
    "backup": "Copy the database to a new file, verified.",
    "browse": "Serve a read-only web view (Datasette).",
    "context": "Changed entities for a session-start prompt, newest first.",
    "datoms": "Page one index (eavt, avet, vaet) in key order.",
    "declare": "Declare the schema of one attribute.",
    "diff": "Facts asserted and retracted between two times.",
    "doctor": "Check every invariant; exit 1 when not ok.",
    "excise": "Erase an entity from the present and from history.",
    "explain": "Print the plan a query would follow.",
    "get": "Print one entity's live attributes.",
    "history": "Every fact ever asserted for an entity.",
    "import": "Import another tool's memory file, idempotently.",
    "info": "Statistics and the latest transaction.",
    "init": "Create the database if needed; print statistics.",
    "mcp": "Serve the database to agents over MCP (stdio).",
    "proposals": "Decide the writes an agent proposed: list, accept, reject.",
    "q": "Answer a Datalog query.",
    "render": "Print an event/1 stream as text, one fact per line.",
    "restore": "Restore a snapshot into a new, empty database.",
    "restore-backup": "Install a physical backup at a new path, verified.",
    "retract": "Retract a fact, an attribute or a whole entity.",
    "review": "What applying an event/1 stream would do.",
    "schema": "Attributes, their behaviour and shapes.",
    "schema-apply": "Make the declared schema equal a schema/1 manifest.",
    "schema-check": "Compare a schema/1 manifest with the database.",
    "schema-export": "Print the declared schema as a schema/1 manifest.",
    "search": "Keyword, vector or hybrid search.",
    "shape": "Create or replace a shape.",
    "snapshot": "Write the exact logical copy as snapshot/1 NDJSON.",
    "sync": "Fan several stores into one target, resumably.",
    "tail": "Stream committed events as event/1 NDJSON.",
    "tx": "Print the receipt of one transaction.",
    "undo": "Write the audited inverse of one transaction.",
    "validate": "Check one entity against its shapes.",
    "verify": "Check a snapshot or event file without a database.",
    "verify-stream": "Check a collected stream against its hash chain.",
    "version": "Print the version of this runtime.",
    "why": "Live facts with the transactions that asserted them.",
}

EXAMPLES = {
    "add": "fgraph --db x.db add '{\"id\":\"ada\",\"person/name\":\"Ada\"}' --by alice",
    "backup": "fgraph --db agent.db backup backups/agent.db",
    "datoms": "fgraph datoms avet --components '[\"person/name\"]' --limit 10",
    "declare": "fgraph declare person/email --type text --unique",
    "doctor": "fgraph --db backups/agent.db doctor --json",
    "excise": "fgraph excise ada --operation-id gdpr-17 --if-basis-tx 120",
    "explain": "fgraph explain '{\"find\":[\"?n\"],\"where\":[[\"?e\",\"person/name\",\"?n\"]]}'",
    "get": "fgraph get ada --at 24h",
    "history": "fgraph history ada person/born",
    "info": "fgraph --db x.db info --json",
    "init": "fgraph --db new.db init",
    "mcp": "fgraph --db project.db mcp --write",
    "q": "fgraph q '{\"find\":[\"?n\"],\"where\":[[\"?e\",\"person/name\",\"?n\"]]}'",
    "restore": "fgraph --db new.db restore s.ndjson",
    "restore-backup": "fgraph restore-backup backups/agent.db agent.db",
    "retract": "fgraph retract ada person/born 1815",
    "schema": "fgraph schema person/",
    "schema-apply": "fgraph schema-apply @schema.json --operation-id schema-v2",
    "schema-check": "fgraph schema-check @schema.json",
    "schema-export": "fgraph schema-export > schema.json",
    "search": "fgraph search --text 'analytical engine' --k 5",
    "shape": "fgraph shape person --required person/name --allowed person/born",
    "snapshot": "fgraph --db x.db snapshot > s.ndjson",
    "tail": "fgraph --db x.db tail --since 24h --follow",
    "tx": "fgraph tx 70",
    "undo": "fgraph undo 70 --by alice",
    "validate": "fgraph validate ada",
    "verify": "fgraph verify s.ndjson",
    "version": "fgraph version",
    "why": "fgraph why ada person/name",
}


def apply_conventions(name: str, command: click.Command) -> None:
    """Give a command its summary, and an example when its own help has none (the group calls
    this as it hands a command out)."""
    command.short_help = SUMMARIES[name]
    if "Example" not in (command.help or "") and name in EXAMPLES:
        command.epilog = f"\b\nExample: {EXAMPLES[name]}"
