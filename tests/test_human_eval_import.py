"""Reading annotators' files: the hand-made set (CSV, JSONL, Label Studio export) and every
malformed case, each reported as one line naming file, row and field; quarantine mode."""
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from tasks.core.artifacts import write_table
from tasks.core.errors import ConfigError, DataErrors
from tasks.stages.human_eval import DIMENSIONS, PERSONAL
from tasks.stages.human_eval.analysis import agreement, krippendorff_alpha
from tasks.stages.human_eval.annotations import import_annotations

HAND = Path(__file__).parent / "data" / "annotations"
HEADER = ("item_id,annotator,a_factuality,a_relevance,a_helpfulness,a_personal_fit,"
          "b_factuality,b_relevance,b_helpfulness,b_personal_fit")
GOOD = {"a_factuality": 5, "a_relevance": 5, "a_helpfulness": 4, "a_personal_fit": 5,
        "b_factuality": 4, "b_relevance": 5, "b_helpfulness": 5, "b_personal_fit": 1}


@pytest.fixture
def key(tmp_path) -> Path:
    return write_table(json.loads((HAND / "key.json").read_text()), tmp_path / "key.parquet", "human_eval_key")


def raw_with(tmp_path, files: dict) -> Path:
    raw = tmp_path / "raw"
    raw.mkdir(exist_ok=True)
    for name, content in files.items():
        (raw / name).write_bytes(content if isinstance(content, bytes) else content.encode())
    return raw


def jsonl(*records) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def the_error(raw, key) -> str:
    with pytest.raises(DataErrors) as exc:
        import_annotations(raw, key, "fail")
    assert len(exc.value.errors) == 1, [e.line() for e in exc.value.errors]
    return exc.value.errors[0].line()


def test_hand_made_set_reads_all_three_forms(key):
    got = import_annotations(HAND / "raw", key)
    assert len(got.ratings) == 3 * 3 * 8 and got.quarantine == []
    assert {r["annotator"] for r in got.ratings} == {"alice", "bob", "carol@example.org"}
    assert got.skipped["cancelled"] == 1
    assert [f["format"] for f in got.files] == ["csv", "jsonl", "labelstudio"]
    fit = {(r["annotator"], r["item_id"], r["side"]): r["score"] for r in got.ratings if r["dimension"] == PERSONAL}
    assert fit[("alice", "it2", "chosen")] == 5 and fit[("alice", "it2", "rejected")] == 2   # it2: B is chosen
    assert {r["domain"] for r in got.ratings} == {"Art", "Lifestyle", "Society"}

    # personal_fit as typed in the files: coders alice, bob, carol; units it1..it3 × (chosen, rejected)
    hand = np.array([[5, 1, 5, 2, 4, 2], [5, 2, 5, 1, 5, 1], [4, 1, 5, 2, 5, 1]], float)
    expected = krippendorff_alpha(hand, "ordinal", [1, 2, 3, 4, 5])
    assert agreement(got.ratings, PERSONAL)["alpha_ordinal"] == expected
    assert 0.7 < expected < 0.9


CASES = {
    "unknown item": ("x.csv", f"{HEADER}\nit9,alice,5,5,4,5,4,5,5,1\n",
                     "raw/x.csv: row 0 (id=it9): field 'item_id': unknown item id 'it9' (not in the unblinding key)"),
    "score above 5": ("x.csv", f"{HEADER}\nit1,alice,7,5,4,5,4,5,5,1\n",
                      "raw/x.csv: row 0 (id=it1): field 'a_factuality': '7' is outside 1-5"),
    "score 0 in JSONL": ("x.jsonl", jsonl({"item_id": "it2", **GOOD, "b_helpfulness": 0}),
                         "raw/x.jsonl: row 0 (id=it2): field 'b_helpfulness': 0 is outside 1-5"),
    "non-integer": ("x.csv", f"{HEADER}\nit1,alice,5,4.5,4,5,4,5,5,1\n",
                    "raw/x.csv: row 0 (id=it1): field 'a_relevance': '4.5' is not a whole number 1-5"),
    "not a number": ("x.csv", f"{HEADER}\nit1,alice,5,5,good,5,4,5,5,1\n",
                     "raw/x.csv: row 0 (id=it1): field 'a_helpfulness': 'good' is not a number"),
    "missing dimension CSV": ("x.csv", f"{HEADER}\nit1,alice,5,5,4,5,4,,5,1\n",
                              "raw/x.csv: row 0 (id=it1): field 'b_relevance': missing rating"),
    "missing dimension JSONL": ("x.jsonl", jsonl({k: v for k, v in {"item_id": "it3", **GOOD}.items()
                                                  if k != "a_personal_fit"}),
                                "raw/x.jsonl: row 0 (id=it3): field 'a_personal_fit': missing rating"),
    "bad line in JSONL": ("x.jsonl", jsonl({"item_id": "it3", **GOOD}) + "{oops\n",
                          "raw/x.jsonl: row 1: not JSON: Expecting property name enclosed in double quotes"),
    "label studio score": ("ls.json", json.dumps([{"data": {"item_id": "it1"}, "annotations": [{
        "completed_by": 4, "result": [{"from_name": f, "type": "rating", "value": {"rating": 9 if f == "b_factuality" else 3}}
                                      for f in GOOD]}]}]),
        "raw/ls.json: row 0 (id=it1): field 'annotations[0].b_factuality': 9 is outside 1-5"),
    "unknown rating control": ("ls.json", json.dumps([{"data": {"item_id": "it1"}, "annotations": [{
        "completed_by": 4, "result": [{"from_name": f, "type": "rating", "value": {"rating": 3}}
                                      for f in [*GOOD, "a_style"]]}]}]),
        "raw/ls.json: row 0 (id=it1): field 'annotations[0].a_style': not a rating control of this form"),
    "unreadable JSON": ("x.json", "[{\"item_id\": ",
                        "raw/x.json: unreadable: Expecting value: line 1 column 14 (char 13)"),
    "not UTF-8": ("x.csv", b"item_id,a_factuality\n\xff\xfe\xfa\n",
                  "raw/x.csv: unreadable: 'utf-8' codec can't decode byte 0xff in position 21: invalid start byte"),
    "no item_id column": ("x.csv", "item,a_factuality\nit1,5\n",
                          "raw/x.csv: unreadable: no 'item_id' column in the header"),
    "spreadsheet": ("x.xlsx", b"PK\x03\x04",
                    "raw/x.xlsx: unsupported file type; expected .csv, .jsonl, .json (Label Studio JSON export)"),
}


@pytest.mark.parametrize("case", CASES)
def test_each_malformed_case_is_one_line(case, tmp_path, key, monkeypatch):
    name, content, line = CASES[case]
    raw_with(tmp_path, {name: content})
    monkeypatch.chdir(tmp_path)    # relative raw dir: lines name files as the user gave them
    assert the_error(Path("raw"), key) == line


def test_conflicting_repeat_across_files_is_one_line(tmp_path, key, monkeypatch):
    raw_with(tmp_path, {"a.csv": f"{HEADER}\nit1,alice,5,5,4,5,4,5,5,1\n",
                        "b.jsonl": jsonl({"item_id": "it1", "annotator": "alice", **GOOD, "a_personal_fit": 3})})
    monkeypatch.chdir(tmp_path)
    assert the_error(Path("raw"), key) == ("raw/b.jsonl: row 0 (id=it1): field 'a_personal_fit': annotator 'alice' "
                                           "rated this twice: 3 here vs 5 in raw/a.csv row 0")
    got = import_annotations(Path("raw"), key, "quarantine")   # neither copy is trusted; the rest is kept
    assert len(got.ratings) == 7 and {q["file"] for q in got.quarantine} == {"raw/a.csv", "raw/b.jsonl"}


def test_equal_repeat_is_kept_once(tmp_path, key):
    raw = raw_with(tmp_path, {"a.csv": f"{HEADER}\nit1,alice,5,5,4,5,4,5,5,1\n",
                              "b.jsonl": jsonl({"item_id": "it1", "annotator": "alice", **GOOD})})
    got = import_annotations(raw, key)
    assert len(got.ratings) == 8 and got.skipped["repeated_ratings"] == 8


def test_every_problem_of_a_run_is_reported_at_once(tmp_path, key):
    raw = raw_with(tmp_path, {"x.csv": f"{HEADER}\nit9,alice,5,5,4,5,4,5,5,1\nit1,alice,5,5,4,5,4,5,6,\n"})
    with pytest.raises(DataErrors) as exc:
        import_annotations(raw, key, "fail")
    assert [(e.row, e.field) for e in exc.value.errors] == [(0, "item_id"), (1, "b_helpfulness"), (1, "b_personal_fit")]


def test_quarantine_keeps_good_rows_and_reports_the_rest(tmp_path, key):
    raw = raw_with(tmp_path, {"x.csv": f"{HEADER}\nit1,alice,5,5,4,5,4,5,5,1\nit2,alice,5,5,4,9,4,5,5,1\n"
                                       "it3,alice,,,,,,,,\n",
                              "y.jsonl": jsonl({"item_id": "it2", "annotator": "bob", **GOOD})})
    got = import_annotations(raw, key, "quarantine")
    assert {(r["annotator"], r["item_id"]) for r in got.ratings} == {("alice", "it1"), ("bob", "it2")}
    assert [(q["row"], q["id"], q["field"]) for q in got.quarantine] == [(1, "it2", "a_personal_fit")]
    assert json.loads(got.quarantine[0]["raw"])["a_personal_fit"] == "9"
    assert got.skipped["blank_rows"] == 1   # it3 left blank: not rated, not an error


def test_unreadable_file_stops_even_in_quarantine_mode(tmp_path, key):
    shutil.copytree(HAND / "raw", tmp_path / "raw")
    (tmp_path / "raw" / "broken.json").write_text("{not json")
    with pytest.raises(DataErrors) as exc:
        import_annotations(tmp_path / "raw", key, "quarantine")
    assert len(exc.value.errors) == 1 and "broken.json: unreadable" in exc.value.errors[0].line()


def test_annotations_without_a_key_and_empty_folders(tmp_path, key):
    raw = raw_with(tmp_path, {".gitkeep": ""})
    assert import_annotations(raw, tmp_path / "none.parquet").ratings == []        # hidden files ignored
    assert import_annotations(tmp_path / "missing", tmp_path / "none.parquet").ratings == []
    shutil.copy(HAND / "raw" / "alice.csv", raw)
    with pytest.raises(ConfigError, match="unblinding key .* does not exist"):
        import_annotations(raw, tmp_path / "none.parquet")
    with pytest.raises(ConfigError, match="on_error"):
        import_annotations(raw, key, "skip")


def test_cli_check_prints_one_line_per_problem(tmp_path, key, capsys):
    import argparse

    from tasks.ops.human_eval_cli import add_parser

    raw = raw_with(tmp_path, {"x.csv": f"{HEADER}\nit1,alice,7,5,4,5,4,5,5,1\n"})
    ap = argparse.ArgumentParser()
    add_parser(ap.add_subparsers(dest="command"))
    params = tmp_path / "params.yaml"
    params.write_text(json.dumps({"common": {"seed": 1}, "human_eval": {"raw_dir": str(raw), "key": str(key)}}))
    args = ap.parse_args(["human-eval", "check", "--params", str(params)])
    assert args.func(args) == 1
    assert capsys.readouterr().err.strip().endswith("field 'a_factuality': '7' is outside 1-5")
    args = ap.parse_args(["human-eval", "check", str(HAND / "raw"), "--params", str(params)])
    assert args.func(args) == 0 and "valid (72 ratings in 3 files)" in capsys.readouterr().out


def test_the_scale_is_the_four_dimensions():
    assert list(DIMENSIONS) == ["factuality", "relevance", "helpfulness", "personal_fit"]
