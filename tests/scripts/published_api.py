"""A program written against the published fgraph 1.2 library (spec 11 §3): it must run unchanged
and print the same on this runtime. tests/interop/test_published_api.py runs it under both."""

import os
import sys
import tempfile

import fgraph
from fgraph import FGraphError, Result, SearchResult, TxReport

work = tempfile.mkdtemp()
db = fgraph.connect(os.path.join(work, "a.db"), clock=1767225600000000)
report = db.transact({"id": "ada", "person/name": "Ada", "person/born": 1815}, by="me", source="notes")
print(type(report).__name__, isinstance(report, TxReport), isinstance(report, dict), report.status, report.tx)
print(sorted(report.to_dict()), report["basis_tx"], len(report.asserted))
try:
    report["tx"] = 1
except TypeError:
    print("reports are immutable")
print(db.declare("person/knows", type="ref", many=True).status)
print(db.transact({"id": "ada", "person/knows": [{"ref": "bob"}]}).ids)
print(db.retract("ada", "person/born").retracted[0]["v"])
result = db.q({"find": ["?n"], "where": [["?e", "person/name", "?n"]]})
print(type(result).__name__, isinstance(result, Result), result.columns, result.rows, result.to_dict())
print(db.q(find=["?e"], where=[["?e", "person/knows", "_"]]).rows)
try:
    db.transact({"id": "ada", "person/born": "x"}, if_basis_tx=1)
except FGraphError as error:
    print("FGraphError", type(error).__name__ in ("Conflict",), isinstance(error, fgraph.Conflict))
try:
    fgraph.connect(os.path.join(work, "b.db"), query_budget=0)
except fgraph.TypeError as error:
    print("fgraph.TypeError", isinstance(error, FGraphError), not isinstance(error, TypeError))
print(db.entity("ada"), [h["v"] for h in db.history("ada", "person/born")])
print(db.backup(os.path.join(work, "copy.db")))
copy = fgraph.connect(os.path.join(work, "restored.db"))
print(copy.restore(db.snapshot()))
print(copy.entity("ada") == db.entity("ada"))
replica = fgraph.connect(os.path.join(work, "replica.db"))
reports = replica.apply("".join(line + "\n" for line in db.iter_events()) if hasattr(db, "iter_events") else
                        "".join(__import__("json").dumps(r) + "\n" for r in db.event_records()))
print(type(reports).__name__, [type(r).__name__ for r in reports], [r.status for r in reports])
print(db.receipt(report.tx)["tx"], db.stats()["transactions"] if "transactions" in db.stats() else "-")

# search and speculation: what-if writes are searchable inside the block and gone after it
db.declare("note/embedding", type="vector", dims=2)
db.transact({"id": "n1", "note/text": "kept note about tools", "note/embedding": {"vector": [1, 0]}})
found = db.search(text="tools", vector=[1, 0], vector_attribute="note/embedding", k=5)
print(type(found).__name__, isinstance(found, SearchResult), list(found), found.work_used, found.truncated)
print([(h["entity"], h["score"], [m["a"] for m in h["matched"]]) for h in found.hits], found.to_dict()["work_used"])
with db.speculate() as what_if:
    print(what_if is db, db.transact({"id": "n2", "note/text": "draft note about tools"}).status)
    print([h["entity"] for h in db.search(text="tools").hits], db.search(text="draft").work_used)
    try:
        with db.speculate():
            pass
    except FGraphError as error:
        print("nested", type(error).__name__)
    try:
        db.transact({"id": "n1", "note/embedding": {"vector": [1, 0, 0]}})
    except FGraphError as error:
        print("inside", isinstance(error, fgraph.TypeError))
    print(db.entity("n2"))
print([h["entity"] for h in db.search(text="tools").hits], db.search(text="draft").hits)
try:
    with db.speculate():
        db.transact({"id": "n3", "note/text": "lost on error"})
        raise KeyError("stop")
except KeyError:
    print("rolled back on error", db.search(text="lost").hits)
try:
    db.at(report.tx).search(text="tools")
except FGraphError as error:
    print("view", type(error).__name__)
for handle in (db, copy, replica):
    handle.close()
sys.stdout.flush()
