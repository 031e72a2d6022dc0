"""Regenerate tests/fixtures/import/mcp-memory.jsonl from the real MCP memory server (issue 16).

    .venv/bin/python tests/scripts/make_mcp_memory_fixture.py [--prefix DIR] [--check]

It installs the pinned ``@modelcontextprotocol/server-memory`` with npm (into a temporary directory,
or DIR with --prefix so a second run reuses it), starts it with ``node`` over stdio through the
official ``mcp`` SDK's stdio client with MEMORY_FILE_PATH pointing into a temporary directory, and
drives it with its own tools: create_entities, create_relations, add_observations,
delete_entities, delete_observations, delete_relations, then read_graph. It copies the memory file
the server wrote, byte for byte, to tests/fixtures/import/mcp-memory.jsonl and records read_graph's
structured result in tests/fixtures/import/mcp-memory.read_graph.json. Every call is checked
against what the server is expected to answer, and the copied file is parsed back and compared
with read_graph before anything is written. With --check nothing is written: the fresh outputs are
compared with the committed ones (exit 1 on a difference). The server writes no timestamps, so
the output is the same on every run. Needs node and npm, and the npm registry.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import Implementation

PACKAGE = "@modelcontextprotocol/server-memory"
VERSION = "2026.8.31"
ROOT = Path(__file__).resolve().parents[2]
OUT_DIR = ROOT / "tests" / "fixtures" / "import"
OUT_JSONL = OUT_DIR / "mcp-memory.jsonl"
OUT_GRAPH = OUT_DIR / "mcp-memory.read_graph.json"
TOOLS = {"create_entities", "create_relations", "add_observations", "delete_entities",
         "delete_observations", "delete_relations", "read_graph", "search_nodes", "open_nodes"}


def rel(frm: str, to: str, kind: str) -> dict:
    return {"from": frm, "to": to, "relationType": kind}


# --- the calls, in order -----------------------------------------------------------------------

ENTITIES = [
    {"name": "Ada Lovelace", "entityType": "person",
     "observations": ["Wrote the first published algorithm for the Analytical Engine",
                      "Born 1815 in London"]},
    {"name": "Charles Babbage", "entityType": "person",
     "observations": ['Called Ada "The Enchantress of Numbers"',  # a double quote
                      "Designed the Difference Engine and the Analytical Engine"]},
    {"name": "Analytical Engine", "entityType": "machine",
     "observations": ["Mechanical general-purpose computer",
                      "Never completed\nonly a trial piece was built"]},  # a newline
    {"name": "Zürich Office", "entityType": "location",  # non-ASCII name
     "observations": ["Büro am See – 3. Stock",
                      "東京チームと共有する会議室",
                      "Größe: 42 m²",
                      "line\u2028separator and paragraph\u2029separator"]},  # U+2028, U+2029 raw
    {"name": "fgraph", "entityType": "software",
     "observations": ["Embedded temporal fact database",
                      "Windows path C:\\fgraph\\data.db",  # backslashes
                      "tab\tseparated",
                      "ships it 🚀 (astral plane)",
                      "</script> & <b>not html</b>"]},
    {"name": "Temp Note", "entityType": "note",
     "observations": ["to be deleted with delete_entities"]},
    {"name": "Empty Concept", "entityType": "concept", "observations": []},  # no observations
]

# a second create_entities: the server skips a name that already exists (whatever its type)
ENTITIES_2 = [
    {"name": "Ada Lovelace", "entityType": "mathematician", "observations": ["ignored duplicate"]},
    {"name": "Grace Hopper", "entityType": "person",
     "observations": ["Rear admiral, US Navy", "Worked on the Harvard Mark I"]},
]

RELATIONS = [
    rel("Ada Lovelace", "Charles Babbage", "collaborated_with"),
    rel("Ada Lovelace", "Charles Babbage", "corresponded_with"),  # same pair, second type
    rel("Charles Babbage", "Analytical Engine", "designed"),
    rel("Ada Lovelace", "Analytical Engine", "wrote notes on"),  # a type with spaces
    rel("Grace Hopper", "Ada Lovelace", "inspired_by"),
    rel("Grace Hopper", "Ada Lovelace", "met"),  # removed by delete_relations
    rel("fgraph", "Zürich Office", "entwickelt_in"),  # non-ASCII target
    rel("fgraph", "SQLite", "depends_on"),  # dangling: no entity is named SQLite
    rel("Temp Note", "Ada Lovelace", "mentions"),  # dropped with Temp Note
    rel("Analytical Engine", "Temp Note", "annotated_by"),  # dropped with Temp Note
    rel("Ada Lovelace", "Charles Babbage", "collaborated_with"),  # repeated in one batch: kept twice
]

# a second create_relations: the server skips a relation already in the graph
RELATIONS_2 = [
    rel("Ada Lovelace", "Charles Babbage", "corresponded_with"),  # already there: skipped
    rel("Empty Concept", "fgraph", "is described by"),
]

ADD_OBSERVATIONS = [
    {"entityName": "Ada Lovelace",
     "contents": ["Daughter of Lord Byron",
                  "Wrote the first published algorithm for the Analytical Engine"]},  # dup: skipped
    {"entityName": "Grace Hopper", "contents": ['Popularised the word "debugging"']},
    {"entityName": "Empty Concept", "contents": []},
]

DELETE_ENTITIES = ["Temp Note"]
DELETE_OBSERVATIONS = [{"entityName": "Ada Lovelace", "observations": ["Born 1815 in London"]}]
DELETE_RELATIONS = [rel("Grace Hopper", "Ada Lovelace", "met")]


def expected_graph() -> dict:
    """What read_graph must answer after the calls above (the server keeps insertion order)."""
    entities = [dict(e, observations=list(e["observations"])) for e in ENTITIES]
    entities += [dict(e, observations=list(e["observations"]))
                 for e in ENTITIES_2 if e["name"] not in {x["name"] for x in ENTITIES}]
    by_name = {e["name"]: e for e in entities}
    for add in ADD_OBSERVATIONS:
        obs = by_name[add["entityName"]]["observations"]
        obs += [c for c in add["contents"] if c not in obs]
    entities = [e for e in entities if e["name"] not in DELETE_ENTITIES]
    for d in DELETE_OBSERVATIONS:
        e = by_name[d["entityName"]]
        e["observations"] = [o for o in e["observations"] if o not in d["observations"]]
    relations: list[dict] = []
    for batch in (RELATIONS, RELATIONS_2):  # the server checks a batch against the graph only
        relations += [r for r in batch if r not in relations]
    relations = [r for r in relations
                 if r["from"] not in DELETE_ENTITIES and r["to"] not in DELETE_ENTITIES
                 and r not in DELETE_RELATIONS]
    return {"entities": entities, "relations": relations}


# --- install and drive -------------------------------------------------------------------------

def run(cmd: list[str], **kw) -> str:
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout.strip()


def install(prefix: Path) -> Path:
    """npm-install the pinned server into prefix (reused when already there); returns its entry point."""
    pkg_dir = prefix / "node_modules" / "@modelcontextprotocol" / "server-memory"
    manifest = pkg_dir / "package.json"
    if not (manifest.exists() and json.loads(manifest.read_text())["version"] == VERSION):
        prefix.mkdir(parents=True, exist_ok=True)
        print(f"npm install {PACKAGE}@{VERSION} into {prefix}", file=sys.stderr)
        subprocess.run(["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund",
                        "--loglevel=error", f"{PACKAGE}@{VERSION}"], check=True, stdout=sys.stderr)
    got = json.loads(manifest.read_text())["version"]
    if got != VERSION:
        raise SystemExit(f"installed {PACKAGE} is {got}, want {VERSION}")
    return pkg_dir / json.loads(manifest.read_text())["bin"]["mcp-server-memory"]


def sdk_version(pkg_dir: Path) -> str:
    """The version of the TypeScript SDK npm resolved for the server (nested or hoisted)."""
    for base in (pkg_dir / "node_modules", pkg_dir.parents[1]):
        manifest = base / "@modelcontextprotocol" / "sdk" / "package.json"
        if manifest.exists():
            return json.loads(manifest.read_text())["version"]
    return "unknown"


async def drive(entry: Path, memory_file: Path, errlog) -> tuple[dict, dict]:
    """Run the calls; returns (read_graph's structured result, the server's serverInfo)."""
    params = StdioServerParameters(command="node", args=[str(entry)],
                                   env={"MEMORY_FILE_PATH": str(memory_file)}, cwd=str(memory_file.parent))
    with anyio.fail_after(120):
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write, client_info=Implementation(
                    name="fgraph-fixture-maker", version="1")) as session:
                init = await session.initialize()
                names = {t.name for t in (await session.list_tools()).tools}
                if not TOOLS <= names:
                    raise SystemExit(f"server lacks tools {sorted(TOOLS - names)}")

                async def call(name: str, arguments: dict) -> dict:
                    result = await session.call_tool(name, arguments)
                    if result.is_error:
                        texts = [getattr(c, "text", "") for c in result.content]
                        raise SystemExit(f"{name} failed: {texts}")
                    return result.structured_content or {}

                out = await call("create_entities", {"entities": ENTITIES})
                assert out["entities"] == ENTITIES, out
                out = await call("create_entities", {"entities": ENTITIES_2})
                assert out["entities"] == ENTITIES_2[1:], out  # the duplicate name is skipped
                out = await call("create_relations", {"relations": RELATIONS})
                assert out["relations"] == RELATIONS, out  # a duplicate within the batch is kept
                out = await call("create_relations", {"relations": RELATIONS_2})
                assert out["relations"] == RELATIONS_2[1:], out  # one already in the graph is skipped
                out = await call("add_observations", {"observations": ADD_OBSERVATIONS})
                assert [r["addedObservations"] for r in out["results"]] == [
                    ["Daughter of Lord Byron"], ['Popularised the word "debugging"'], []], out
                out = await call("delete_entities", {"entityNames": DELETE_ENTITIES})
                assert out["success"], out
                out = await call("delete_observations", {"deletions": DELETE_OBSERVATIONS})
                assert out["success"], out
                out = await call("delete_relations", {"relations": DELETE_RELATIONS})
                assert out["success"], out
                graph = await call("read_graph", {})
                text = (await session.call_tool("read_graph", {})).content[0].text
                if json.loads(text) != graph:
                    raise SystemExit("read_graph's text content and structured content differ")
                info = init.server_info.model_dump(exclude_none=True) if init.server_info else {}
                return graph, info


def parse_memory_file(data: bytes) -> dict:
    """Read the file as the server itself does: split on \\n only, skip blank lines, by `type`."""
    graph: dict = {"entities": [], "relations": []}
    for line in data.decode("utf-8").split("\n"):
        if not line.strip():
            continue
        item = json.loads(line)
        if item["type"] == "entity":
            graph["entities"].append({k: item[k] for k in ("name", "entityType", "observations")})
        elif item["type"] == "relation":
            graph["relations"].append({k: item[k] for k in ("from", "to", "relationType")})
        else:
            raise ValueError(f"unexpected type {item['type']!r}")
    return graph


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prefix", type=Path, help="npm prefix to install into and reuse (default: a temporary directory)")
    ap.add_argument("--check", action="store_true", help="compare with the committed fixtures, write nothing")
    args = ap.parse_args()
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is not on PATH")

    with tempfile.TemporaryDirectory(prefix="mcp-memory-fixture-") as tmp:
        tmp_path = Path(tmp)
        entry = install(args.prefix.resolve() if args.prefix else tmp_path / "npm")
        sdk = sdk_version(entry.parents[1])
        memory_file = tmp_path / "data" / "memory.jsonl"
        memory_file.parent.mkdir()
        errfile = tmp_path / "server-stderr.txt"
        with open(errfile, "w") as errlog:
            try:
                graph, info = anyio.run(drive, entry, memory_file, errlog)
            except BaseException:
                sys.stderr.write(errfile.read_text())
                raise
        data = memory_file.read_bytes()
        leftovers = sorted(p.name for p in memory_file.parent.iterdir() if p != memory_file)

    want = expected_graph()
    if graph != want:
        raise SystemExit(f"read_graph differs from the expected graph:\n{json.dumps(graph, indent=1)}")
    if parse_memory_file(data) != graph:
        raise SystemExit("the memory file does not parse back to read_graph's graph")
    if leftovers:
        raise SystemExit(f"the server left other files beside the memory file: {leftovers}")
    graph_text = json.dumps(graph, ensure_ascii=False, indent=2) + "\n"

    node = run(["node", "--version"])
    trailing = data.endswith(b"\n")
    summary = (f"{PACKAGE}@{VERSION} (serverInfo {info.get('name')} {info.get('version')}, "
               f"@modelcontextprotocol/sdk {sdk}), node {node}: {len(graph['entities'])} entities, "
               f"{len(graph['relations'])} relations, {len(data)} bytes, "
               f"trailing newline: {trailing}")
    if args.check:
        same = OUT_JSONL.read_bytes() == data and OUT_GRAPH.read_text(encoding="utf-8") == graph_text
        print(("same as committed: " if same else "DIFFERS from committed: ") + summary)
        return 0 if same else 1
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    OUT_JSONL.write_bytes(data)
    OUT_GRAPH.write_text(graph_text, encoding="utf-8")
    print(f"wrote {OUT_JSONL.relative_to(ROOT)} and {OUT_GRAPH.relative_to(ROOT)}: {summary}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("npm_config_update_notifier", "false")
    sys.exit(main())
