"""What every benchmark importer shares (tasks/stages/benchmarks/base.py), by hand: a row's field checks fail in one
line naming file, row, id and field with the exact reason; `load` keeps a subset and a limit, and refuses a subset
the data does not hold naming the key with "did you mean"; the published strict accuracy counts a tie and an invalid
item as wrong, per subset and overall; the profile as the RMs read it."""
from __future__ import annotations

import pytest

from tasks.core.errors import ConfigError, DataError
from tasks.stages.benchmarks import get
from tasks.stages.benchmarks.base import Benchmark, Row, format_profile, published_accuracy
from tasks.stages.sources import RawRow


def _row(data, id_field="id"):
    return Row(RawRow("f.jsonl", 3, data), id_field)


@pytest.mark.parametrize("data, call, field, message", [
    ({}, lambda r: r.text("q"), "q", "missing"),
    ({"q": 3}, lambda r: r.text("q"), "q", "expected a string, got int"),
    ({"q": "  "}, lambda r: r.text("q"), "q", "empty"),
    ({}, lambda r: r.texts("a"), "a", "missing"),
    ({"a": "one"}, lambda r: r.texts("a"), "a", "expected a list of strings, got str"),
    ({"a": 5}, lambda r: r.texts("a"), "a", "expected a list of strings, got int"),
    ({"a": []}, lambda r: r.texts("a"), "a", "empty list"),
    ({"a": ["x", " "]}, lambda r: r.texts("a"), "a[1]", "expected a non-empty string"),
    ({"a": ["x", 2]}, lambda r: r.texts("a"), "a[1]", "expected a string, got int"),
    ({"a": ["x", "y"]}, lambda r: r.texts("a", n=3), "a", "expected 3 answers, got 2"),
    ({}, lambda r: r.integer("n"), "n", "missing"),
    ({"n": True}, lambda r: r.integer("n"), "n", "expected an integer, got bool"),
    ({"n": "2"}, lambda r: r.integer("n"), "n", "expected an integer, got str"),
    ({}, lambda r: r.message_text("m"), "m", "missing"),
    ({"m": {"role": "assistant"}}, lambda r: r.message_text("m"), "m", "missing"),
    ({"m": " "}, lambda r: r.message_text("m"), "m", "expected a non-empty string or message"),
    ({"m": 4}, lambda r: r.message_text("m"), "m", "expected a string or message, got int"),
    ({"m": []}, lambda r: r.message_text("m"), "m", "expected a string or message, got list"),
    ({"uid": None}, lambda r: r.required_id(), "uid", "missing"),
])
def test_a_field_check_names_file_row_id_field_and_reason(data, call, field, message):
    row = _row({"uid": 7, **data}, "uid") if "uid" not in data else _row(data, "uid")
    with pytest.raises(DataError) as exc:
        call(row)
    e = exc.value
    assert (e.file, e.row, e.field, e.message) == ("f.jsonl", 3, field, message)
    assert e.row_id == (None if data.get("uid", 7) is None else "7")


def test_field_values_that_pass():
    row = _row({"id": 12, "q": "hi", "a": ("x", "y"), "n": 4, "m": [{"content": "first"}, {"content": "last"}]})
    assert (row.id, row.required_id(), row.text("q"), row.texts("a", n=2), row.integer("n")) == ("12", "12", "hi", ("x", "y"), 4)
    assert row.message_text("m") == "last" and _row({"m": "plain"}).message_text("m") == "plain"
    assert _row({"m": {"content": "c"}}).message_text("m") == "c"
    three = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "mid"}, {"role": "user", "content": "end"}]
    assert _row({"m": three}).message_text("m") == "end", "the last message of a conversation, not the second"
    assert row.text("none", required=False) is None and row.get("none", 5) == 5 and row.get("q") == "hi"
    assert _row({}).id is None


class _Mini(Benchmark):
    name = "mini"

    def item(self, row):
        from tasks.models.listwise import Item
        return None if row.get("skip") else Item(row.required_id(), "p", ("a",), ("b",), subset=row.get("subset"))


def _raw(rows):
    return [RawRow("mini.jsonl", i, r) for i, r in enumerate(rows)]


def test_load_keeps_a_subset_and_a_limit_and_refuses_a_subset_not_held(monkeypatch):
    rows = [{"id": "1", "subset": "chat"}, {"id": "2", "subset": "math"}, {"id": "3", "subset": "chat"},
            {"id": "4", "skip": True}]
    monkeypatch.setattr(_Mini, "raw_rows", lambda self, path, hub_id: iter(_raw(rows)))
    b = _Mini()
    assert [i.id for i in b.load()] == ["1", "2", "3"]
    assert [i.id for i in b.load(subset="chat")] == ["1", "3"]
    assert [i.id for i in b.load(subset="chat", limit=1)] == ["1"] and b.load(limit=0) == []
    with pytest.raises(ConfigError) as exc:
        b.load(subset="chatt", subset_key="benchmarks.x.subset")
    assert str(exc.value) == "benchmarks.x.subset: no subset 'chatt' in mini (did you mean 'chat'?); valid: chat, math"
    b.revision = "old"
    b.load(revision="abc")
    assert (b.asked_revision, b.revision) == ("abc", None), "a local load reads no revision"


def test_a_row_that_is_not_an_object_or_unreadable_stops_the_load():
    with pytest.raises(DataError) as exc:
        list(Benchmark.checked(iter(_raw([{"id": 1}, [1, 2]]))))
    assert (exc.value.file, exc.value.row, exc.value.message) == ("mini.jsonl", 1, "expected an object per row, got list")
    broken = RawRow("mini.jsonl", 0, None, error=DataError("mini.jsonl", "bad json", row=0))
    with pytest.raises(DataError, match="bad json"):
        list(Benchmark.checked(iter([broken])))


def test_a_path_that_does_not_exist_or_holds_no_data_is_named(tmp_path):
    with pytest.raises(ConfigError) as exc:
        _Mini().files(str(tmp_path / "gone"))
    assert str(exc.value) == f"benchmarks (mini): path '{tmp_path / 'gone'}' does not exist"
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(ConfigError) as exc:
        _Mini().files(str(tmp_path))
    assert str(exc.value) == f"benchmarks (mini): no .parquet/.json/.jsonl files under '{tmp_path}'"


def test_strategies_follow_the_profile_and_the_profile_reads_numbered():
    assert get("prism").strategies() == ["none", "raw_profile"] and get("generic").strategies() == ["none"]
    assert format_profile(["a", "b"]) == "[1] a\n[2] b" and format_profile(()) == ""


def _scored(subset, correct, tie=False, invalid=False):
    return {"subset": subset, "correct": correct, "tie": tie, "invalid": invalid, "tie_credit": 0.5}


def test_the_published_accuracy_counts_a_tie_and_an_invalid_item_wrong_per_subset_and_overall():
    rows = [_scored("b", True), _scored("b", False, tie=True), _scored("a", True), _scored("a", True, invalid=True),
            _scored("a", True)]
    assert published_accuracy("r", rows) == {"rule": "r", "score": 0.6, "subsets": {"a": 0.6667, "b": 0.5}}
    assert published_accuracy("r", []) == {"rule": "r", "score": None, "subsets": {}}


def test_hub_rows_resolve_the_revision_once_and_label_each_row_with_it(monkeypatch):
    """The hub client itself runs against a local server in test_hub_benchmarks.py (slow); here what an importer
    asks of it: the revision resolved once per load, every config read at that sha, each row labelled."""
    from tasks.stages import hub

    calls = []
    monkeypatch.setattr(hub, "resolve", lambda *a: calls.append(("resolve", *a)) or "sha1")
    monkeypatch.setattr(hub, "label", lambda *a: f"label:{a}")
    monkeypatch.setattr(hub, "rows", lambda *a: calls.append(("rows", *a)) or iter([{"x": 1}, {"x": 2}]))
    b = _Mini()
    b.asked_revision, b.revision = "main", None
    got = list(b.hub_rows("org/data", "cfg"))
    assert calls == [("resolve", "benchmarks (mini)", "org/data", "main", "cfg", "test"),
                     ("rows", "benchmarks (mini)", "org/data", "cfg", "test", "sha1")]
    assert [(r.file, r.index, r.row, r.config) for r in got] == [
        ("label:('org/data', 'sha1', 'cfg', 'test')", 0, {"x": 1}, "cfg"), ("label:('org/data', 'sha1', 'cfg', 'test')", 1, {"x": 2}, "cfg")]
    list(b.hub_rows("org/data", "other", split="train"))
    assert [c[0] for c in calls] == ["resolve", "rows", "rows"] and calls[-1][3:] == ("other", "train", "sha1")


def test_a_hub_load_reads_every_config_of_the_asked_or_published_id(monkeypatch):
    seen = []
    monkeypatch.setattr(_Mini, "hub_configs", ("a", "b"))
    monkeypatch.setattr(_Mini, "hub_id", "org/published")
    monkeypatch.setattr(_Mini, "hub_rows", lambda self, hub, config=None, split=None: seen.append((hub, config)) or iter(()))
    list(_Mini().raw_rows(None, None))
    list(_Mini().raw_rows(None, "org/copy"))
    assert seen == [("org/published", "a"), ("org/published", "b"), ("org/copy", "a"), ("org/copy", "b")]


def test_load_passes_the_hub_id_and_names_the_subset_key_by_default(monkeypatch):
    asked = []
    monkeypatch.setattr(_Mini, "raw_rows", lambda self, path, hub_id: asked.append((path, hub_id)) or
                        iter(_raw([{"id": "1", "subset": "chat"}])))
    _Mini().load(None, "org/x")
    assert asked == [(None, "org/x")]
    with pytest.raises(ConfigError, match=r"^subset: no subset 'nope' in mini; valid: chat$"):
        _Mini().load(subset="nope")
