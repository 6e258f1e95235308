"""Every supported source layout yields the same tables; released-benchmark rows bring pairs."""
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tasks.stages import ingest
from tasks.core.errors import ConfigError, DataErrors
from tests.conftest import ingest_params, make_row, write_json_rows

ROWS = [make_row(i) for i in range(3)]


def _tables(path, **kw):
    res = ingest.ingest_from_params(ingest_params(path, **kw))
    return res.questions, res.profiles, res.pairs


def test_json_jsonl_parquet_agree(tmp_path):
    a = write_json_rows(tmp_path / "a" / "Art_and_Entertainment_test.json", ROWS).parent
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "Art_and_Entertainment_test.jsonl").write_text("\n".join(json.dumps(r) for r in ROWS))
    (tmp_path / "c" / "Art_and_Entertainment").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(ROWS), tmp_path / "c" / "Art_and_Entertainment" / "test-00000-of-00001.parquet")
    results = [_tables(p) for p in (a, tmp_path / "b", tmp_path / "c")]
    assert results[0] == results[1] == results[2]
    questions, profiles, pairs = results[0]
    assert [q["id"] for q in questions] == ["1_0_0", "1_0_1", "1_0_2"]
    assert questions[0]["domain"] == "Art" and questions[0]["split"] == "test"
    assert questions[0]["rubric_aspects"][0] == {"aspect": "Budget", "evidence": "little money", "reason": "cost matters"}
    assert len(profiles) == 48 and profiles[5] == {"question_id": "1_0_0", "item_id": "1_0_0_5", "position": 5,
                                                   "category": "travel", "text": ROWS[0]["profile"][5]["text"]}
    assert pairs == []


def test_released_benchmark_layout_emits_pairs(tmp_path):
    rows = [dict(r, chosen="Short cheap plan " * 5, rejected="Long luxury plan with extras " * 4) for r in ROWS]
    write_json_rows(tmp_path / "Society_and_Culture_test.json", rows)
    _, _, pairs = _tables(tmp_path)
    assert len(pairs) == 3
    assert pairs[0]["domain"] == "Society" and pairs[0]["generator"] == "reference:test"
    assert (pairs[0]["chosen_words"], pairs[0]["rejected_words"]) == (15, 20)
    assert pairs[0]["length_ratio"] == pytest.approx(0.75)


def test_layout_rewardbench_requires_pairs(tmp_path):
    path = write_json_rows(tmp_path / "Society_and_Culture_test.json", ROWS)
    with pytest.raises(DataErrors) as err:
        _tables(tmp_path, layout="rewardbench")
    # every row's both missing answers at once, each naming file, row, id and field
    assert [(e.file, e.row, e.row_id, e.field, e.message) for e in err.value.errors] == [
        (str(path), i, f"1_0_{i}", field, "missing") for i in range(3) for field in ("chosen", "rejected")]
    assert str(err.value).splitlines()[0] == f"{path}: row 0 (id=1_0_0): field 'chosen': missing"


def test_filters_configs_splits_and_limit(tmp_path):
    write_json_rows(tmp_path / "Art_and_Entertainment_test.json", ROWS)
    write_json_rows(tmp_path / "Art_and_Entertainment_train.json", [make_row(i, prefix="1_1") for i in range(4)])
    write_json_rows(tmp_path / "Society_and_Culture_test.json", [make_row(i, prefix="3_0") for i in range(2)])
    q, _, _ = _tables(tmp_path, configs=["Art_and_Entertainment"], splits=["train"], limit_per_split=2)
    assert [x["id"] for x in q] == ["1_1_0", "1_1_1"]


def test_hub_source_offline_is_one_clear_error():
    with pytest.raises(ConfigError, match=r"ingest.hub_id: cannot load hf://alireza7/LaMP-QA@main/Art_and_Entertainment/"
                                          r"test: offline \(HF_HUB_OFFLINE\) and revision 'main' is not in the HF cache; "
                                          r".*`hf download alireza7/LaMP-QA --repo-type dataset --revision main`"):
        ingest.ingest(ingest.resolve_sources(ingest_params("unused", source="hub", configs=["Art_and_Entertainment"],
                                                           splits=["test"])))
