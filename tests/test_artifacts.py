"""Artifacts are schema-checked, atomic and byte-deterministic."""
import pyarrow as pa
import pytest

from tasks.artifacts import file_hash, write_json, write_table
from tasks.schemas import SCHEMAS, SchemaMismatch

ROW = {"question_id": "q", "item_id": "q_0", "position": 0, "category": "c", "text": "t"}


def test_same_rows_same_bytes(tmp_path):
    a = write_table([ROW, dict(ROW, item_id="q_1", position=1)], tmp_path / "a.parquet", "profiles")
    b = write_table([ROW, dict(ROW, item_id="q_1", position=1)], tmp_path / "b.parquet", "profiles")
    assert file_hash(a) == file_hash(b)


def test_wrong_columns_raise_and_leave_nothing(tmp_path):
    bad = pa.table({"question_id": ["q"], "oops": [1]})
    with pytest.raises(SchemaMismatch, match="artifact 'profiles': columns"):
        write_table(bad, tmp_path / "x.parquet", "profiles")
    assert list(tmp_path.iterdir()) == []


def test_wrong_types_raise(tmp_path):
    with pytest.raises(SchemaMismatch, match="artifact 'profiles'"):
        write_table(pa.table({k: [v if k != "position" else "zero"] for k, v in ROW.items()}),
                    tmp_path / "x.parquet", "profiles")


def test_failed_write_keeps_previous_file(tmp_path, monkeypatch):
    path = write_table([ROW], tmp_path / "a.parquet", "profiles")
    before = file_hash(path)
    import pyarrow.parquet as pq

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(pq, "write_table", boom)
    with pytest.raises(OSError):
        write_table([ROW, ROW], path, "profiles")
    assert file_hash(path) == before and [p.name for p in tmp_path.iterdir()] == ["a.parquet"]


def test_json_is_sorted_and_stable(tmp_path):
    write_json({"b": 1, "a": [1, 2]}, tmp_path / "m.json")
    assert (tmp_path / "m.json").read_text() == '{\n  "a": [\n    1,\n    2\n  ],\n  "b": 1\n}\n'


def test_every_schema_is_named():
    assert set(SCHEMAS) >= {"questions", "profiles", "pairs", "quarantine", "ranked_profile", "profile_context"}
