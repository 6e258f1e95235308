"""`prbench score` on another benchmark: the layout of --data is recognised (or named by --benchmark);
the table has accuracy with its CI, chance, n, ties and one row per subset; a bad file is one line."""
import json

import pytest

from flows import cli
from tasks.stages.benchmarks.cli import detect
from tests.test_benchmarks import PATHS


@pytest.mark.parametrize("name", sorted(PATHS))
def test_each_fixture_layout_is_recognised(name):
    assert detect(str(PATHS[name])) == name


def test_score_prints_accuracy_ci_chance_n_ties_and_subsets(tmp_path, capsys):
    out = tmp_path / "out"
    rc = cli.main(["score", "--kind", "length-longer", "--data", str(PATHS["rewardbench2"]), "--out", str(out)])
    text = capsys.readouterr().out
    assert rc == 0
    lines = text.splitlines()
    assert lines[0].startswith("rewardbench2 / length-longer  (tie policy strict, 95% bootstrap CI)")
    assert lines[1].split() == ["strategy", "/", "subset", "accuracy", "CI", "chance", "n", "ties", "invalid"]
    assert lines[2].split()[:2] == ["none", "(all)"] and lines[2].split()[2] == "0.500"
    assert lines[2].split()[-4:] == ["0.250", "6", "2", "0"]
    assert [line.split()[0] for line in lines[3:6]] == ["Factuality", "Math", "Ties"]
    # the published line: RewardBench 2's own rule (1/k for a k-way top tie; the mean of the subsets)
    assert "subsets.Ties 1.0096" in text and f"score {round((0.5 + 0.4167 + 1.0096) / 3, 4)}" in text
    doc = json.loads((out / "results.json").read_text())
    assert doc["schema_version"] == 1 and doc["benchmark"] == "rewardbench2" and doc["n"] == 6
    assert doc["results"]["strategies"]["none"]["accuracy"] == 0.5
    assert (out / "scores.parquet").exists()


def test_named_benchmark_subset_and_a_bad_file(tmp_path, capsys):
    rc = cli.main(["score", "--kind", "length-shorter", "--benchmark", "rm-bench", "--data", str(PATHS["rm-bench"]),
                   "--subset", "chat", "--out", str(tmp_path / "o")])
    text = capsys.readouterr().out
    assert rc == 0 and "rm-bench / length-shorter" in text and "  chat" in text and "  math" not in text
    bad = tmp_path / "ppe.jsonl"
    bad.write_text(PATHS["ppe-human"].read_text().replace('"winner": "model_b", "language": "German"',
                                                          '"language": "German"'))
    rc = cli.main(["score", "--kind", "random", "--data", str(bad), "--out", str(tmp_path / "o2")])
    err = capsys.readouterr().err.strip()
    assert rc == 1 and err == f"{bad}: row 3 (id=q4): field 'winner': expected one of model_a, model_b, " \
                              "response_1, response_2, tie, tie (bothbad), got None"
