"""Proves the schema surface (fgraph.query.schema, fgraph.core.declare.shape_request): the page
and its digest as spec 13 §11 pins them, attributes(), declare_shape's exact request (its hash
is the published runtime's), and validate after an excision breaks a shape."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import pytest

import fgraph
from fgraph.core.canonical import dumps
from fgraph.core.declare import shape_request
from tests.support.constants import CONFORMANCE_CLOCK

CLOCK = CONFORMANCE_CLOCK


def test_a_fresh_page_and_its_digest():
    with fgraph.connect(":memory:", clock=CLOCK) as db:
        assert db.schema() == {"attributes": [], "basis_tx": 64, "shapes": [],
                               "digest": "sha256:efcd291ab1ea79fb28806c921fa3eae193424e743429904ff01422f58e23ab81"}
        system = db.schema(include_system=True)["attributes"]
        assert [a["name"] for a in system][:3] == ["fgraph/at", "fgraph/by", "fgraph/dims"]
        with pytest.raises(fgraph.ValueTypeError):
            db.schema(3)


def test_the_spec_page_declared_effective_observed():
    with fgraph.connect(":memory:", clock=CLOCK) as db:
        db.declare("item/title", type="text", doc="Title")
        db.declare("item/embedding", type="vector", dims=2, vector_model="test-embed/1")
        db.declare_shape("shape/article", required=["item/title"], allowed=["item/embedding"], closed=True)
        db.transact({"id": "article/one", "fgraph/shape": {"ref": "shape/article"}, "item/title": "Portable facts",
                     "item/embedding": {"vector": [1, 0]}})
        page = db.schema("item/")
        assert page["digest"] == "sha256:33baed66a7ff02e2567146923a23b181f26f2a21ca5d30874b50372007ad9379"
        embedding = page["attributes"][0]
        assert embedding["effective"]["nohistory"] is True and embedding["observed"] == {
            "entities": 1, "live_facts": 1, "types": ["vector"]}
        assert page["shapes"] == [{"allowed": ["item/embedding", "item/title"], "closed": True,
                                   "name": "shape/article", "required": ["item/title"]}]
        listed = {a["name"]: a for a in db.attributes()}
        assert listed["article/one"] == {"facts": 0, "many": False, "name": "article/one", "nohistory": False,
                                         "types": [], "unique": False}
        assert listed["item/title"]["doc"] == "Title" and "dims" not in listed["item/title"]
        with pytest.raises(fgraph.SchemaError):
            db.transact({"id": "article/two", "fgraph/shape": {"ref": "shape/article"},
                         "item/embedding": {"vector": [0, 1]}})


def test_shape_requests_hash_as_the_published_runtime():
    def request_hash(**kw):
        return hashlib.sha256(dumps({"data": shape_request(**kw), "options": {}}).encode()).hexdigest()
    assert request_hash(name="s/a") == "9b82ae8dce69041bdd2d6c21ac06199475f6f450f20990b8b0bedeef7b0212d7"
    assert request_hash(name="shape/article", required=["item/title"], allowed=["item/embedding"], closed=True) \
        == "9973e55b35abd16d9fa5177b7598907dd5229d8255c555c6826a9e2b295b57eb"


@pytest.mark.parametrize("kw,error", [
    ({"name": "fgraph/type"}, fgraph.Unsupported), ({"name": "fgraph/mine"}, fgraph.SchemaError),
    ({"name": 3}, fgraph.SchemaError), ({"name": "s", "required": "a/b"}, fgraph.SchemaError),
    ({"name": "s", "allowed": ["BAD"]}, fgraph.SchemaError), ({"name": "s", "closed": 1}, fgraph.SchemaError)])
def test_bad_shapes_write_nothing(kw, error):
    with fgraph.connect(":memory:", clock=CLOCK) as db:
        with pytest.raises(error):
            db.declare_shape(**kw)
        assert db.latest_tx() == 64


def test_validate_after_an_excision_and_the_cli(tmp_path):
    exe = os.path.join(os.path.dirname(sys.executable), "fgraph")
    path = str(tmp_path / "v.db")
    env = dict(os.environ, FGRAPH_CLOCK=str(CLOCK))

    def run(*args):
        proc = subprocess.run([exe, "--db", path, "--json", *args], capture_output=True, text=True, env=env)
        return proc.returncode, proc.stdout, proc.stderr

    assert run("declare", "a/x", "--ref")[0] == 0
    assert run("shape", "shape/a", "--required", "a/x", "--required", "a/w", "--allowed", "b/y", "--closed")[0] == 0
    assert run("add", '{"id":"e1","fgraph/shape":{"ref":"shape/a"},"a/x":{"ref":"victim"},"a/w":1}')[0] == 0
    assert run("excise", "victim", "--operation-id", "x1", "--if-basis-tx", "73")[0] == 0
    code, out, _ = run("validate", "e1")
    assert code == 0 and json.loads(out) == {"basis_tx": 74, "valid": False, "violations": [
        {"attribute": "a/x", "code": "required", "entity": "e1", "message": "required attribute is missing",
         "shape": "shape/a"}]}
    assert run("shape", "s/b", "--closed", "--open")[0] == 2
    assert run("validate", "nobody")[2].startswith("NotFound")
    code, out, _ = run("schema", "a/")
    assert code == 0 and [a["name"] for a in json.loads(out)["attributes"]] == ["a/w", "a/x"]


def test_manifests_export_and_check():
    with fgraph.connect(":memory:", clock=CLOCK) as db:
        assert db.schema_manifest()["digest"] == \
            "sha256:68a8b398e47ea218eba368a03158c15afd037238966c63f234c92b3e723c16a2"
        db.declare("project/id", type="text", unique=True)
        db.declare("project/tags", type="text", many=True)
        db.declare_shape("shape/project", required=["project/id"], allowed=["project/tags"], closed=True)
        exported = db.schema_manifest()
        assert exported["digest"] == "sha256:67d3acc86efe00e32cbda76a9cfbcbd79352a44086b0888c646d82581f21e565"
        same = db.check_schema_manifest(dict(exported, digest="ignored"))
        assert same["valid"] and same["changes"] == [] and same["current_digest"] == same["desired_digest"]
        drift = db.check_schema_manifest({"fgraph": "schema/1", "attributes": [
            {"name": "project/id", "declared": {"type": "text", "unique": True}}]})
        assert [(c["kind"], c["name"], c["after"]) for c in drift["changes"]] == [
            ("attribute", "project/tags", None), ("shape", "shape/project", None)]
        for bad in ({"fgraph": "schema/2"}, {"fgraph": "schema/1", "x": 1},
                    {"fgraph": "schema/1", "attributes": [{"name": "a/b", "declared": {"dims": True}}]},
                    {"fgraph": "schema/1", "shapes": [{"name": "s", "required": [], "allowed": []}]}):
            with pytest.raises(fgraph.SchemaError):
                db.check_schema_manifest(bad)


def test_apply_a_manifest_as_the_spec_example():
    m1 = {"fgraph": "schema/1", "attributes": [
        {"name": "project/tags", "declared": {"type": "text", "many": True}},
        {"name": "project/id", "declared": {"type": "text", "unique": True}}],
        "shapes": [{"name": "shape/project", "required": ["project/id"], "allowed": ["project/tags"], "closed": True}]}
    only_id = {"fgraph": "schema/1", "attributes": [{"name": "project/id", "declared": {"type": "text", "unique": True}}]}
    with fgraph.connect(":memory:", clock=CLOCK) as db:
        first = db.apply_schema_manifest(m1, operation_id="schema-manifest:apply")
        assert first["tx"] == 68 and [f["id"] for f in first["asserted"]] == list(range(40, 49))
        assert db.receipt(68)["request_hash"] == \
            "sha256:a6648af7eb0532ef76411f5bb484659e401329a2410fba1ac604a87121ebb9b9"
        assert db.schema_manifest()["digest"] == \
            "sha256:67d3acc86efe00e32cbda76a9cfbcbd79352a44086b0888c646d82581f21e565"
        with pytest.raises(fgraph.Conflict):
            db.apply_schema_manifest(only_id, operation_id="r2", if_basis_tx=64)
        with pytest.raises(fgraph.Conflict):
            db.apply_schema_manifest(only_id, operation_id="schema-manifest:apply")
        second = db.apply_schema_manifest(only_id, operation_id="r2", if_basis_tx=68)
        assert second["tx"] == 69 and [f["id"] for f in second["retracted"]] == [43, 44, 48, 45, 46, 47]
        assert db.apply_schema_manifest(dict(only_id, digest="anything"))["status"] == "noop"
        with pytest.raises(fgraph.Unsupported):
            db.apply_schema_manifest({"fgraph": "schema/1", "attributes": [
                {"name": "fgraph/type", "declared": {"doc": "x"}}]})
        with pytest.raises(fgraph.ReadOnly):
            db.at(68).apply_schema_manifest(only_id)


def test_schema_apply_plans_inside_its_write_transaction(tmp_path):
    """A declaration committed by another handle after the manifest was read is still retracted:
    the plan is made from the schema as it stands when the write begins, never from a stale read."""
    from fgraph.query import manifest as manifest_module
    path = str(tmp_path / "race.db")
    with fgraph.connect(path) as db, fgraph.connect(path) as other:
        db.declare("a/x", type="text")
        wanted = {"fgraph": "schema/1", "attributes": [{"name": "a/x", "declared": {"type": "text"}}]}
        plan, envelope = manifest_module.apply_request(wanted, path)
        other.declare("a/late", type="int")  # lands between the read of the manifest and the write
        from fgraph.core.transact import Request
        report = db._run(Request([], hash_envelope=envelope, derived=plan))
        assert [(f["e"], f["a"]) for f in report["retracted"]] == [("a/late", "fgraph/type")]
        assert db.schema_manifest()["attributes"] == wanted["attributes"]
