"""results.json (docs/results.md): `schema_version` 1, and every document checked against tasks/core/results.py
before it is written: a field missing or misnamed raises instead of writing a file a reader cannot trust."""
from __future__ import annotations

import pydantic
import pytest

from tasks.core import results

FIELDS = {"benchmark": "rewardbench2", "model": {"name": "rm", "entry": {"kind": "random"}, "identity": "random:1"},
          "data": "d", "params": "defaults", "config": {}, "n": 3, "results": {}, "run": {}}


def test_a_document_carries_schema_version_1_and_its_fields():
    doc = results.document(**FIELDS)
    assert doc["schema_version"] == 1 and results.SCHEMA_VERSION == 1
    assert doc["benchmark"] == "rewardbench2" and doc["model"]["scoring"] == {} and doc["numerics"] == {}


@pytest.mark.parametrize("change", [{"benchmark": None}, {"n_items": 3}, {"model": {**FIELDS["model"], "weights": "x"}}])
def test_a_missing_mistyped_or_misnamed_field_raises(change):
    fields = {k: v for k, v in {**FIELDS, **change}.items() if v is not None}
    with pytest.raises(pydantic.ValidationError):
        results.document(**fields)


def test_results_go_to_one_folder_per_benchmark_and_model_with_safe_names(tmp_path):
    assert results.folder("rewardbench2", "acme/rm v2", tmp_path) == tmp_path / "rewardbench2" / "acme_rm_v2"
    assert results.folder("prism", "acme/rm v2", tmp_path) != results.folder("rewardbench2", "acme/rm v2", tmp_path)
    assert results.folder("personalised", "../..", tmp_path) == tmp_path / "personalised" / "_", "never outside"
    assert results.folder("personalised", "rm-1.5+x", tmp_path).name == "rm-1.5+x"
