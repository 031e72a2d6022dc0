"""Recall of MCP ``recall`` on questions an agent asks (issue 30, decision S1): recall@5 and the
share of questions answered (an expected entity in the top 5) before (the published rule, our
``match="fact"``), after (our MCP ``recall``, ``fill``) and on the published server's ``recall``,
each through a real MCP stdio session; then the time of one ``recall`` on the 100,000-event
search benchmark store, ours against the published library's ``search``.

    .venv/bin/python benchmarks/recall.py [--events 100000] [--repeat 3] [--list]

Two stores: the import fixtures (tests/fixtures/import: an MCP memory-server file and a
decision log) with hand-written questions, and a generated team memory (people, services,
incidents, decisions; seeded) with questions made from templates. ``--list`` prints every
question with what each runtime found. The peer is FGRAPH_PEER (refpeer); without it only our
figures are printed.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile

import anyio
import orjson

from common import REPO, fgraph, fgraph_executable
from query import measure, peer_python
from recall_eval import GROUPS, QUESTIONS, expected_keys, write_store_inputs
from search import build as build_search_store

FIXTURES = os.path.join(REPO, "tests", "fixtures", "import")
K = 5


def decision(record_id: str) -> str:
    return f"decision:{record_id}"


SQLITE_WAL, AUTH_PG = decision("df7f1a95-1e9d-5ce0-a16f-c446f0894fcb"), decision("53a5bd2f-bd3e-5dbc-977a-2909fb623dc6")
ROTATE, REDIS_CACHE = decision("5aaa0aac-75c6-512a-928a-585bc29fd519"), decision("942cff23-8859-5465-b0c2-96b948439652")
ON_CALL, GRAPHQL = decision("6f89885b-6afe-5ea2-a434-331bccf75eb6"), decision("4e5c0818-1a35-56dc-9eae-78b5d2d61957")

# (question, entities a good answer contains) over the import fixtures
FIXTURE_QUESTIONS = [
    ("ada lovelace", ["Ada Lovelace"]),
    ("who designed the analytical engine", ["Charles Babbage"]),
    ("who wrote notes on the analytical engine", ["Ada Lovelace"]),
    ("babbage difference engine", ["Charles Babbage"]),
    ("who collaborated with babbage", ["Ada Lovelace"]),
    ("who inspired grace hopper", ["Ada Lovelace"]),
    ("debugging navy", ["Grace Hopper"]),
    ("harvard mark", ["Grace Hopper"]),
    ("lord byron daughter", ["Ada Lovelace"]),
    ("what does fgraph depend on", ["SQLite"]),
    ("where is fgraph developed", ["Zürich Office"]),
    ("which decisions mention redis", [REDIS_CACHE]),
    ("why did we choose sqlite", [SQLITE_WAL]),
    ("decision about the auth service database", [AUTH_PG]),
    ("how often are api keys rotated", [ROTATE]),
    ("caching invoices", [REDIS_CACHE]),
    ("graphql gateway postponed", [GRAPHQL]),
    ("who covers on-call in zürich", [ON_CALL]),
    ("decisions about postgresql", [AUTH_PG, REDIS_CACHE]),
    ("partner api keys notice", [ROTATE]),
]


# ----------------------------------------------------------------- the generated team memory

FIRST = ["Alice", "Bruno", "Chen", "Dana", "Emeka", "Farah", "Goran", "Hana", "Ivan", "Jules", "Kofi", "Lena",
         "Mateo", "Nora", "Omar", "Priya", "Quinn", "Rosa", "Sven", "Tara"]
LAST = ["Abbott", "Berg", "Costa", "Dubois", "Eriksen", "Fischer", "Garcia", "Haddad", "Ito", "Jensen"]
HOBBIES = ["sourdough baking", "bouldering", "chess", "trail running", "woodworking", "birdwatching", "cycling",
           "origami", "pottery", "sailing"]
SERVICES = ["billing", "checkout", "search", "notifications", "inventory", "auth", "reporting", "shipping",
            "payments", "recommendations", "catalog", "analytics"]
LANGUAGES = ["Go", "Rust", "Python", "Kotlin", "TypeScript"]
CAUSES = [("the database connection pool was exhausted", "connection pool"),
          ("a certificate expired", "expired certificate"),
          ("a deploy shipped a bad configuration", "bad config deploy"),
          ("the disk filled up with logs", "disk full"),
          ("a memory leak crashed the workers", "memory leak"),
          ("DNS lookups timed out", "dns timeouts")]
TOPICS = [("Kafka", "move event delivery to Kafka", "replays are needed for audits"),
          ("Terraform", "manage infrastructure with Terraform", "reviews should see every change"),
          ("feature flags", "ship risky changes behind feature flags", "rollbacks must not need a deploy"),
          ("canary releases", "roll out through canary releases", "a bad build then reaches few users"),
          ("OpenTelemetry", "instrument services with OpenTelemetry", "one tracing standard across languages"),
          ("weekly rotations", "rotate on-call weekly", "longer shifts burned people out")]


def generated_memory(seed: int = 7):
    """(facts for one transaction each, questions): 60 people, 12 services, 60 incidents, 24
    decisions, and 30 questions about them, the answer of each known by construction."""
    rng = random.Random(seed)
    batches, questions = [], []
    people = [f"{FIRST[i % 20]} {LAST[(i // 20 + i) % 10]}" for i in range(60)]
    hobby = {}
    for name in people:
        hobby[name] = rng.choice(HOBBIES)
        batches.append({"id": name, "person/name": name, "person/role": rng.choice(["engineer", "manager", "sre"]),
                        "person/note": f"Spends weekends on {hobby[name]}"})
    maintainer = {}
    for service in SERVICES:
        maintainer[service] = rng.sample(people, 2)
        batches.append({"id": f"svc:{service}", "service/name": f"{service} service",
                        "service/language": rng.choice(LANGUAGES),
                        "service/maintainers": [{"ref": p} for p in maintainer[service]]})
    incidents = []
    for i in range(60):
        service, (cause, short) = rng.choice(SERVICES), rng.choice(CAUSES)
        responder = rng.choice(people)
        incidents.append((f"inc:{i}", service, short, responder))
        batches.append({"id": f"inc:{i}", "incident/title": f"INC-{1000 + i}: {service} outage",
                        "incident/summary": f"Requests failed because {cause}; restarted and monitored",
                        "incident/service": {"ref": f"svc:{service}"}, "incident/responder": {"ref": responder}})
    for i, (_topic, what, why) in enumerate(TOPICS * 4):
        owner = rng.choice(SERVICES)
        batches.append({"id": f"dec:{i}", "decision/text": f"{what.capitalize()} for the {owner} service",
                        "decision/why": why.capitalize(), "decision/references": {"ref": f"svc:{owner}"}})
    for service in SERVICES[:8]:
        questions.append((f"who maintains {service}", maintainer[service]))
    for name in people[:8]:
        questions.append((f"{name.split()[0].lower()} {name.split()[1].lower()} hobby", [name]))
        questions.append((f"who likes {hobby[name]}", [p for p in people if hobby[p] == hobby[name]][:5]))
    seen = set()
    for _inc, service, short, _responder in incidents:
        if (service, short) in seen or len(seen) == 6:
            continue
        seen.add((service, short))
        matching = [i for i, s, c, _ in incidents if s == service and c == short]
        questions.append((f"{service} incident {short}", matching))
    return batches, questions


# ----------------------------------------------------------------- asking through MCP

def ask_all(executable: str, path: str, questions: list) -> list:
    """The entities of each question's top-5 ``recall`` hits, through one MCP stdio session."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=executable, args=["--db", path, "mcp"], env=dict(os.environ))

    async def main():
        answers = []
        with open(os.devnull, "w") as quiet:
            async with stdio_client(params, errlog=quiet) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    for question, _ in questions:
                        result = await session.call_tool("recall", {"query": question, "k": K})
                        hits = [] if result.is_error else result.structured_content["data"]["hits"]
                        answers.append([h["entity"] for h in hits])
        return answers
    return anyio.run(main)


def ask_published_rule(path: str, questions: list) -> list:
    """Before: the published rule (every word in one fact) on our library, ``match="fact"``."""
    with fgraph.connect(path, read_only=True) as db:
        return [[h["entity"] for h in db.search(text=q, k=K, match="fact")["hits"]] for q, _ in questions]


def score(questions: list, answers: list) -> tuple[float, int]:
    """(mean recall@5 over questions, questions with an expected entity in the top 5)."""
    recalls, answered = [], 0
    for (_, expected), found in zip(questions, answers):
        got = len(set(expected) & set(found[:K]))
        recalls.append(got / min(len(expected), K))
        answered += got > 0
    return sum(recalls) / len(recalls), answered


def build_fixture_store(path: str) -> None:
    exe = fgraph_executable()
    for fmt, name in (("mcp-memory", "mcp-memory.jsonl"), ("jsonl-log", "decisions.clean.jsonl")):
        subprocess.run([exe, "--db", path, "import", fmt, os.path.join(FIXTURES, name)], check=True,
                       capture_output=True)


def build_generated_store(path: str, batches: list) -> None:
    with fgraph.connect(path) as db:
        db.declare("service/maintainers", ref=True, many=True)
        for batch in batches:
            db.transact(batch)


# ----------------------------------------------------------------- the evaluation set (issue 50)

def build_eval_store(path: str, directory: str) -> tuple[str, str]:
    memory, log = write_store_inputs(directory)
    exe = fgraph_executable()
    for fmt, name in (("mcp-memory", memory), ("jsonl-log", log)):
        subprocess.run([exe, "--db", path, "import", fmt, name], check=True, capture_output=True)
    return memory, log


def bm25_baseline(memory: str, log: str, questions: list) -> list:
    """What a user writes in twenty lines: one FTS5 row per entity (name, type, observations, its
    relations) and per decision (what, why, alternatives, entities), the question's words OR-ed,
    ranked by BM25."""
    import sqlite3
    import re
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE doc USING fts5(key, body, tokenize='porter unicode61 remove_diacritics 2')")
    rows: dict[str, list[str]] = {}
    with open(memory, "rb") as lines:
        for line in lines:
            item = orjson.loads(line)
            if item["type"] == "entity":
                rows.setdefault(item["name"], []).extend([item["name"], item["entityType"], *item["observations"]])
            else:
                rows.setdefault(item["from"], []).append(f"{item['relationType']} {item['to']}")
                rows.setdefault(item["to"], []).append(f"{item['from']} {item['relationType']}")
    with open(log, "rb") as lines:
        for line in lines:
            item = orjson.loads(line)
            content = item["content"]
            rows[f"decision:{item['id']}"] = [content["what"], content["why"], *content["alternatives"], *item["entities"]]
    db.executemany("INSERT INTO doc VALUES (?, ?)", [(key, "\n".join(body)) for key, body in rows.items()])
    answers = []
    for question, _ in questions:
        words = re.findall(r"\w+", question.lower())
        match = " OR ".join(f'"{w}"' for w in words) or '""'
        answers.append([key for (key,) in db.execute(
            "SELECT key FROM doc WHERE doc MATCH ? ORDER BY bm25(doc) LIMIT ?", (match, K))])
    return answers


def first_rank(expected: list, found: list) -> int | None:
    for rank, entity in enumerate(found[:K], 1):
        if entity in expected:
            return rank
    return None


def eval_set(peer: str | None, tmp: str, show: bool) -> None:
    """Answered (an expected entity in the top 5) and MRR per group: ours, BM25, published."""
    path = os.path.join(tmp, "couriers.db")
    memory, log = build_eval_store(path, tmp)
    questions = [(q, expected_keys(e)) for _, q, e in QUESTIONS]
    runs = {"ours": ask_all(fgraph_executable(), path, questions), "FTS5 BM25": bm25_baseline(memory, log, questions)}
    if peer:
        copy = path + ".peer.db"
        subprocess.run(["cp", path, copy], check=True)
        runs["published"] = ask_all(peer, copy, questions)
    print(f"evaluation set (benchmarks/recall_eval.py): answered in the top {K} / MRR, MCP recall, no embedder")
    print(f"{'group':12} {'questions':>9}" + "".join(f" {label:>16}" for label in runs))
    for group in (*GROUPS, "all"):
        picked = [i for i, (g, _, _) in enumerate(QUESTIONS) if group in (g, "all")]
        line = f"{group:12} {len(picked):9}"
        for answers in runs.values():
            ranks = [first_rank(questions[i][1], answers[i]) for i in picked]
            answered = sum(r is not None for r in ranks)
            mrr = sum(1 / r for r in ranks if r) / len(picked)
            line += f" {answered:5}/{len(picked):<3} {mrr:5.2f}"
        print(line)
    print("targets: natural >= 16 of 20 (ours), every misspelled key word found")
    if show:
        for i, (group, question, _) in enumerate(QUESTIONS):
            print(f"  [{group}] {question!r}: expected {questions[i][1]}")
            for label, answers in runs.items():
                print(f"      {label:10} {answers[i]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--list", action="store_true", help="print every question and what was found")
    parser.add_argument("--eval-only", action="store_true", help="only the evaluation set of issue 50")
    args = parser.parse_args()
    peer = os.environ.get("FGRAPH_PEER")
    if args.eval_only:
        with tempfile.TemporaryDirectory(prefix="fgraph-recall-eval-") as tmp:
            eval_set(peer, tmp, args.list)
        return
    batches, generated_questions = generated_memory()
    with tempfile.TemporaryDirectory(prefix="fgraph-recall-bench-") as tmp:
        sets = [("fixtures", os.path.join(tmp, "fixtures.db"), FIXTURE_QUESTIONS),
                ("generated", os.path.join(tmp, "team.db"), generated_questions)]
        build_fixture_store(sets[0][1])
        build_generated_store(sets[1][1], batches)
        total = sum(len(q) for _, _, q in sets)
        print(f"{total} questions; recall@{K} (mean over questions) and questions answered in the top {K}")
        print(f"{'store':10} {'questions':>9} {'before':>15} {'after (ours)':>15} {'published':>15}")
        sums = {"before": [0.0, 0], "after": [0.0, 0], "published": [0.0, 0]}
        for name, path, questions in sets:
            runs = {"before": ask_published_rule(path, questions), "after": ask_all(fgraph_executable(), path, questions)}
            if peer:
                copy = path + ".peer.db"
                subprocess.run(["cp", path, copy], check=True)
                runs["published"] = ask_all(peer, copy, questions)
            line = f"{name:10} {len(questions):9}"
            for label in ("before", "after", "published"):
                if label not in runs:
                    line += f" {'-':>15}"
                    continue
                recall, answered = score(questions, runs[label])
                sums[label][0] += recall * len(questions)
                sums[label][1] += answered
                line += f" {recall:6.2f} {answered:3}/{len(questions):<3}"
            print(line)
            if args.list:
                for i, (question, expected) in enumerate(questions):
                    print(f"  {question!r}: expected {expected}")
                    for label, answers in runs.items():
                        print(f"      {label:9} {answers[i]}")
        line = f"{'all':10} {total:9}"
        for label in ("before", "after", "published"):
            if label == "published" and not peer:
                line += f" {'-':>15}"
                continue
            line += f" {sums[label][0] / total:6.2f} {sums[label][1]:3}/{total:<3}"
        print(line + "   (target: >= 5 of 6 answered, after)")
        eval_set(peer, tmp, args.list)
        big = os.path.join(tmp, "big.db")
        build_search_store(big, args.events, 0)
        theirs_python = peer_python()
        print(f"recall time on the {args.events}-event search store (k=10, best of {args.repeat}):")
        for label, text in (("two words", "w5 w40"), ("rare word", "w1500"), ("no hit by the published rule",
                                                                              "w1999 w1998 w1997"),
                            ("unknown word (typo scan)", "wxyzq")):
            ours = measure(sys.executable, big, "search", {"text": text, "k": 10, "match": "fill"}, args.repeat)
            line = f"  {label:30} ours (fill) {ours['seconds'] * 1000:8.1f} ms"
            if theirs_python:
                theirs = measure(theirs_python, big, "search", {"text": text, "k": 10}, args.repeat)
                line += (f"   published {theirs['seconds'] * 1000:8.1f} ms   "
                         f"published/ours {theirs['seconds'] / max(ours['seconds'], 1e-9):5.1f}x (target >= 1)")
            print(line)


if __name__ == "__main__":
    main()
