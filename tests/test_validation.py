"""Each malformed input gives one error line naming file, row (index and id) and field —
through the ingest stage and through `prbench validate` — and nothing is written."""
import json

import pytest

from flows.cli import main as cli
from tasks.stages import ingest
from tasks.core.errors import ConfigError, DataErrors
from tests.conftest import ingest_params, make_row, write_json_rows

FILE = "Art_and_Entertainment_test.json"


def rows_with(i, **overrides):
    return [make_row(0), make_row(1), make_row(2, **overrides), make_row(3)]


def _drop(field):
    row = make_row(2)
    del row[field]
    return [make_row(0), make_row(1), row, make_row(3)]


CASES = {
    "missing field": (lambda: _drop("question"), "row 2 (id=1_0_2): field 'question': missing"),
    "wrong type": (lambda: rows_with(2, category=7), "row 2 (id=1_0_2): field 'category': expected a string, got int"),
    "wrong type inside profile": (
        lambda: rows_with(2, profile=[{"category": "x", "id": "1_0_2_0", "text": 5}] * 15),
        "field 'profile[0].text': expected a string, got int"),
    "empty question": (lambda: rows_with(2, question="   "), "row 2 (id=1_0_2): field 'question': empty"),
    "duplicate id": (lambda: rows_with(2, id="1_0_0"), "row 2 (id=1_0_0): field 'id': duplicate id, first seen at"),
    "empty profile": (lambda: rows_with(2, profile=[]), "row 2 (id=1_0_2): field 'profile': empty list"),
    "non-list profile": (lambda: rows_with(2, profile="my posts"),
                         "field 'profile': expected a list of posts, got str"),
    "aspects not objects": (lambda: rows_with(2, rubric_aspects=["budget", "beginner"]),
                            "field 'rubric_aspects[0]': expected an object with aspect, evidence, reason, got str"),
    "aspects not a list": (lambda: rows_with(2, rubric_aspects={"aspect": "x"}),
                           "field 'rubric_aspects': expected a list of aspect objects, got dict"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_stage_and_validate_give_one_line(case, tmp_path, capsys):
    make, expected = CASES[case]
    path = write_json_rows(tmp_path / "data" / FILE, make())
    out = {k: str(tmp_path / "out" / f"{k}.x") for k in ("questions", "profiles", "pairs", "quarantine", "halves",
                                                         "metrics", "plot")}
    with pytest.raises(DataErrors) as err:
        ingest.run(ingest_params(tmp_path / "data"), out, 1)
    lines = str(err.value).splitlines()
    assert len(lines) == 1 and expected in lines[0] and lines[0].startswith(str(path)), lines
    assert not (tmp_path / "out").exists(), "no partial output"

    assert cli(["validate", str(path)]) == 1
    stderr = capsys.readouterr().err.strip().splitlines()
    assert stderr == lines


def test_invalid_utf8_names_the_field(tmp_path, capsys):
    text = json.dumps([make_row(0), make_row(1, narrative="MARK")], ensure_ascii=False).encode()
    path = tmp_path / FILE
    path.write_bytes(text.replace(b"MARK", b"caf\xe9 au lait"))   # latin-1 byte, not UTF-8
    assert cli(["validate", str(path)]) == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == f"{path}: row 1 (id=1_0_1): field 'narrative': invalid UTF-8 bytes"


def test_json_syntax_error_names_row_and_position(tmp_path, capsys):
    good = json.dumps([make_row(0), make_row(1), make_row(2)], indent=1)
    broken = good.replace('"1_0_2_3"', '"1_0_2_3" "oops"', 1)
    path = tmp_path / FILE
    path.write_text(broken)
    assert cli(["validate", str(path)]) == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"{path}: row 2: JSON syntax error at line ")
    assert "Expecting" in line


def test_jsonl_syntax_error_is_a_row_error(tmp_path, capsys):
    path = tmp_path / "Society_and_Culture_train.jsonl"
    path.write_text("\n".join([json.dumps(make_row(0)), "{not json", json.dumps(make_row(2))]) + "\n")
    assert cli(["validate", str(path)]) == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"{path}: row 1: JSON syntax error at line 2 column 2")


def test_unknown_config_in_file_name(tmp_path, capsys):
    path = write_json_rows(tmp_path / "Arts_and_Entertainment_test.json", [make_row(0)])
    assert cli(["validate", str(path)]) == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"{path}: unknown config name 'Arts_and_Entertainment' in the file name "
                           "(did you mean 'Art_and_Entertainment'?); valid: Art_and_Entertainment, ")


def test_unknown_config_in_params_suggests(tmp_path):
    write_json_rows(tmp_path / FILE, [make_row(0)])
    with pytest.raises(ConfigError, match=r"ingest.configs: unknown config: unknown name 'Society' "
                                          r"\(did you mean 'Society_and_Culture'\?\)"):
        ingest.resolve_sources(ingest_params(tmp_path, configs=["Society"]))


def test_valid_file_passes(tmp_path, capsys):
    path = write_json_rows(tmp_path / FILE, [make_row(i) for i in range(3)])
    assert cli(["validate", str(path)]) == 0
    assert "valid" in capsys.readouterr().out


def test_quarantine_keeps_good_rows_and_reports_bad(tmp_path, figures):
    rows = [make_row(0), make_row(1, question=""), make_row(2), make_row(3, profile=[]), make_row(4, id="1_0_0")]
    write_json_rows(tmp_path / "data" / FILE, rows)
    out = {k: str(tmp_path / "out" / f"{k}.parquet") for k in ("questions", "profiles", "pairs", "quarantine", "halves")}
    out |= {"metrics": str(tmp_path / "out" / "m.json"), "plot": str(tmp_path / "out" / "p.png")}
    metrics = ingest.run(ingest_params(tmp_path / "data", on_error="quarantine"), out, 1)

    import pyarrow.parquet as pq

    kept = pq.read_table(out["questions"]).column("id").to_pylist()
    assert kept == ["1_0_0", "1_0_2"]
    bad = pq.read_table(out["quarantine"]).to_pylist()
    assert [(b["row"], b["field"]) for b in bad] == [(1, "question"), (3, "profile"), (4, "id")]
    assert json.loads(bad[0]["raw"])["id"] == "1_0_1", "the bad row itself is kept"
    assert metrics["quarantined_rows"] == 3 and metrics["questions"] == 2
    assert metrics["quarantine_reasons"] == {"id": 1, "profile": 1, "question": 1}
    (ax,) = figures["p.png"]
    assert list(ax["xticks"].values()) == ["Art"], "one box per domain of the kept rows"
    assert {v for _, y in ax["series"] for v in y} == {16.0}, "the box is at 16: both kept users have 16 posts"


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_stage_command_prints_no_traceback(tmp_path, stage_server):
    """The real stage process: exit 1, one line, no traceback, no outputs."""
    import subprocess
    import sys

    import yaml

    from tests.conftest import ROOT

    write_json_rows(tmp_path / "data" / FILE, rows_with(2, profile="oops"))
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["ingest"] = ingest_params(tmp_path / "data")
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    env = {**__import__("os").environ, "PYTHONPATH": str(ROOT), **stage_server.client_env()}
    proc = subprocess.run([sys.executable, "-m", "flows.stage", "ingest"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr + proc.stdout
    expected = f"{tmp_path}/data/{FILE}: row 2 (id=1_0_2): field 'profile': expected a list of posts, got str"
    assert expected in proc.stderr.splitlines()
    assert not (tmp_path / "data" / "ingest").exists()


def test_an_id_seen_in_another_file_or_split_is_a_duplicate(tmp_path, capsys):
    """One question under two splits would put a test question into training (a leak); under two
    domains it would be scored twice. Each repeat is one line naming its file, row and the first one."""
    data = tmp_path / "data"
    train = write_json_rows(data / "Art_and_Entertainment_train.json", [make_row(0), make_row(1)])
    test = write_json_rows(data / "Art_and_Entertainment_test.json", [make_row(2), make_row(1)])
    other = write_json_rows(data / "Lifestyle_and_Personal_Development_test.json", [make_row(0), make_row(3)])
    expected = [f"{test}: row 1 (id=1_0_1): field 'id': duplicate id, first seen at {train} row 1",
                f"{other}: row 0 (id=1_0_0): field 'id': duplicate id, first seen at {train} row 0"]
    out = {k: str(tmp_path / "out" / f"{k}.x") for k in ("questions", "profiles", "pairs", "quarantine", "halves",
                                                         "metrics", "plot")}
    with pytest.raises(DataErrors) as err:
        ingest.run(ingest_params(data), out, 1)
    assert str(err.value).splitlines() == expected
    assert not (tmp_path / "out").exists(), "no partial output"
    assert cli(["validate", str(data)]) == 1
    assert capsys.readouterr().err.strip().splitlines() == expected

    kept = ingest.ingest(ingest.resolve_sources(ingest_params(data)), on_error="quarantine")
    assert [(q["id"], q["split"], q["domain"]) for q in kept.questions] == [
        ("1_0_0", "train", "Art"), ("1_0_1", "train", "Art"), ("1_0_2", "test", "Art"), ("1_0_3", "test", "Lifestyle")]
    assert [(b["file"], b["row"], b["field"]) for b in kept.quarantine] == [(str(test), 1, "id"), (str(other), 0, "id")]


def test_the_counts_count_rows_and_questions_not_quarantine_entries():
    """ingest's metrics: a row with two problems is one quarantined row (two reasons); a reason's list index is
    folded; rl_prompt_questions counts the RL-prompt files' rows only; the per-domain means are rounded to 2."""
    from tasks.stages.ingest import IngestResult, ingest_metrics

    q = lambda i, d, s, aspects=0: {"id": i, "domain": d, "split": s, "rubric_aspects": [{}] * aspects}  # noqa: E731
    res = IngestResult(
        questions=[q("a", "Art", "test", 2), q("b", "Art", "test", 1), q("c", "Art", "train"), q("r", "Art", "train"),
                   q("h1", "History", "test", 1), q("h2", "History", "test"), q("h3", "History", "test")],
        profiles=[{"question_id": i} for i in ("a", "a", "a", "b", "c", "h1")],
        pairs=[{"domain": "Art", "split": "test"}] * 2,
        quarantine=[{"file": "f.json", "row": 3, "field": "profile[2].text"}, {"file": "f.json", "row": 3, "field": "question"},
                    {"file": "f.json", "row": 7, "field": "profile[10].text"}, {"file": "g.json", "row": 3, "field": None}],
        files=[{"file": "f.json", "rows": 6, "role": "benchmark"}, {"file": "p.json", "rows": 1, "role": "rl_prompts"},
               {"file": "hf://org/ds@main/x.parquet", "rows": 0, "role": "benchmark", "revision": "abc"}])
    m = ingest.ingest_metrics(res)
    assert (m["questions"], m["profile_items"], m["pairs"]) == (7, 6, 2)
    assert m["quarantined_rows"] == 3, "f.json's row 3 twice is one row; g.json's row 3 is another"
    assert m["quarantine_reasons"] == {"profile[].text": 2, "question": 1, "row": 1}
    assert m["rl_prompt_questions"] == 1
    assert m["per_domain_split"] == {
        "Art/test": {"questions": 2, "pairs": 2, "mean_profile_items": 2.0, "mean_aspects": 1.5},
        "Art/train": {"questions": 2, "pairs": 0, "mean_profile_items": 0.5, "mean_aspects": 0.0},
        "History/test": {"questions": 3, "pairs": 0, "mean_profile_items": 0.33, "mean_aspects": 0.33}}
    assert list(m["per_domain_split"]) == ["Art/test", "Art/train", "History/test"]
    assert m["revision"] == {"org/ds": "abc"} and "revision" not in ingest.ingest_metrics(IngestResult())


def test_the_limit_per_split_counts_the_rows_kept_not_the_rows_read(tmp_path):
    rows = [make_row(0, question=""), make_row(1), make_row(2), make_row(3)]
    write_json_rows(tmp_path / FILE, rows)
    res = ingest.ingest_from_params({**ingest_params(tmp_path, on_error="quarantine"), "limit_per_split": 2})
    assert [q["id"] for q in res.questions] == ["1_0_1", "1_0_2"], "the bad first row does not use up the limit"
    assert [f["rows"] for f in res.files] == [2]
