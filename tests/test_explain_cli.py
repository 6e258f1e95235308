"""`prbench explain` and the explain stage's refusals, on a small project built in a temp folder: the real
explain stage on synthetic scores (tests/explain_inputs.py's pairs; chosen the longer answer in even pairs)."""
import json

import pytest

from flows import cli
from tasks.core import layout
from tasks.core.errors import ConfigError
from tasks.core.artifacts import write_table
from tasks.ops.explain_cli import explain, marked
from tasks.stages.explain import stage
from tests import explain_inputs
from tests.scale_report import DOMAINS, _score

STRATEGIES = ["none", "raw_profile", "planner", "oracle"]
RMS = {"length-longer": {"kind": "length-longer"}, "judge-a": {"kind": "similarity"}, "judge-b": {"kind": "similarity"}}


def params() -> dict:
    """Exactly the keys the stage declares (what flows/stage.py hands it), from a whole params file."""
    from tasks.core.stage_table import used_params

    full = {"common": {"seed": 1, "fidelity": "corrected", "cache_dir": "x"}, "scoring": {"rms": RMS},
            "leaderboard": {"split": "test", "benchmark": "personalised", "tie_policy": "strict", "bootstrap": 200,
                            "ci": 0.95, "heatmap_strategy": "raw_profile"},
            "explain": {"min_n": 10, "profile_bins": 3}}
    return used_params(full, "explain")


def right(rm: str, strategy: str, i: int) -> bool:
    if rm == "length-longer":
        return i % 2 == 0
    if rm == "judge-a":   # right with a profile, wrong without it on pair 3
        return i != 5 and (strategy != "none" or i != 3)
    return i % 3 != 0


def build(root, ids=15) -> dict:
    pairs = [(f"q{i}", DOMAINS[i % 3]) for i in range(ids)]
    inputs = explain_inputs.write(root, pairs)
    scores = {rm: str(write_table([_score(rm, s, i, right(rm, s, i)) for s in STRATEGIES for i in range(ids)],
                                  root / layout.scores(rm)["scores"], "scores")) for rm in RMS}
    return {**inputs, "scores": scores}


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("explain")
    stage.run(params(), build(root), {k: str(root / v) for k, v in layout.EXPLAIN.items()})
    return root


def test_explain_prints_every_figure_and_the_wrong_pairs(project, capsys):
    assert cli.main(["explain", "judge-a", "--strategy", "raw_profile", "--root", str(project)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("judge-a (contestant) · raw_profile: accuracy 93.3% [")
    assert any(line.startswith("  picked the longer answer: ") and "[length-longer 100.0%]" in line for line in out)
    assert "  vs none: right only with this context on 1 of 15 pairs, only without it on 0; net +6.7 pp" in "\n".join(out)
    assert out[-1].startswith("  not right on 1 pair: q5")


def test_explain_a_pair_marks_each_answers_own_words_and_each_strategys_margin(project, capsys):
    assert cli.main(["explain", "judge-a", "--pair", "q3", "--root", str(project)]) == 0
    out = capsys.readouterr().out
    chosen = next(line for line in out.splitlines() if line.startswith("chosen (35 words): "))
    rejected = next(line for line in out.splitlines() if line.startswith("rejected (47 words): "))
    assert chosen.endswith(" budget {+steel strings.+}") and chosen.count("{+") == 1
    assert rejected.endswith(" budget [-level tradition constraints tone detail format and the user's own nylon strings "
                             "under budget.-]") and rejected.count("[-") == 1
    assert "judge-a · none: wrong, margin -1; contestants right: 0 of 2" in out
    assert "judge-a · raw_profile: right, margin +1; contestants right: 1 of 2" in out
    assert "[planner] the RMs saw: What I expect in an answer: inferred 0 of q3; inferred 1 of q3" in out
    assert cli.main(["explain", "judge-a", "--pair", "q1", "--strategy", "planner", "--root", str(project)]) == 0
    assert "[planner] the RMs saw: the planner's reply never parsed: the question only" in capsys.readouterr().out


@pytest.mark.parametrize("args, line", [
    (["judge_a"], "explain: unknown RM 'judge_a' (did you mean 'judge-a'?); this run has judge-a, judge-b, length-longer"),
    (["judge-a", "--strategy", "raw"], "explain: unknown strategy 'raw' (did you mean 'raw_profile'?); this run has "
                                       "none, oracle, planner, raw_profile"),
    (["judge-a", "--pair", "q99"], "explain: unknown pair 'q99' (did you mean 'q9'?); this run has q0, q1, q10"),
])
def test_an_unknown_name_is_one_line_with_did_you_mean(project, capsys, args, line):
    assert cli.main(["explain", *args, "--root", str(project)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(line) and err.count("\n") == 1, err


def test_explain_before_any_run_says_what_to_run(tmp_path, capsys):
    assert cli.main(["explain", "judge-a", "--root", str(tmp_path)]) == 1
    assert capsys.readouterr().err == ("explain: no metrics/explain.json here: run `prbench run` (or `dvc repro explain`)"
                                       " in the project first\n")


def test_marked_wraps_only_the_own_words():
    assert marked(["a ", "b c ", "d"], "{+", "+}") == "a {+b c+} d"


def test_the_stage_refuses_scores_older_than_the_pairs_and_writes_nothing(tmp_path):
    inputs = build(tmp_path, ids=6)
    stale = write_table([_score("judge-a", "none", i, True) for i in range(8)], tmp_path / "stale.parquet", "scores")
    out = {k: str(tmp_path / "out" / v) for k, v in layout.EXPLAIN.items()}
    with pytest.raises(ConfigError, match=rf"^{stale}: pair 'q6' is not among the benchmark's pairs .*run score@judge-a"):
        stage.run(params(), {**inputs, "scores": {**inputs["scores"], "judge-a": str(stale)}}, out)
    assert not (tmp_path / "out").exists(), "nothing partial left behind"
    with pytest.raises(ConfigError, match="explain: no scored pairs of benchmark 'personalised' in split 'test'"):
        stage.run(params(), {**inputs, "scores": {}}, out)
    bad = {**params(), "leaderboard": {**params()["leaderboard"], "tie_policy": "halve"}}
    with pytest.raises(ConfigError, match="leaderboard.tie_policy: unknown policy 'halve'"):
        stage.run(bad, inputs, out)


def test_the_stage_is_deterministic(tmp_path):
    outs = []
    for name in ("a", "b"):
        root = tmp_path / name
        out = {k: str(root / v) for k, v in layout.EXPLAIN.items()}
        stage.run(params(), build(root), out)
        outs.append([open(out[k], "rb").read() for k in ("cells", "pairs", "metrics")])
    assert outs[0] == outs[1]
    metrics = json.loads(outs[0][2])
    # under none judge-a is wrong on q3 and q5, judge-b on q0, q3, q6, q9, q12: both on q3, one of them on five
    assert metrics["outcomes"]["none"] == {"contestants": 2, "pairs": 15, "every_contestant_wrong": 1,
                                           "contestants_disagree": 5}


def test_the_plot_shows_the_length_rules_as_defined_and_leaves_the_coins_out(tmp_path, figures):
    p = params()
    p["scoring"]["rms"] = {**RMS, "coin": {"kind": "random"}}
    inputs = build(tmp_path)
    coin = write_table([_score("coin", s, i, i % 4 == 0) for s in STRATEGIES for i in range(15)],
                       tmp_path / layout.scores("coin")["scores"], "scores")
    stage.run(p, {**inputs, "scores": {**inputs["scores"], "coin": str(coin)}},
              {k: str(tmp_path / v) for k, v in layout.EXPLAIN.items()})
    (ax,) = figures["explain_length.png"]
    ticks = {label: x for x, label in ax["xticks"].items()}
    assert sorted(ticks) == ["judge-a", "judge-b", "length-longer"], "a coin's share says nothing: left out"
    near = lambda rm: {y for xs, ys in ax["series"] for x, y in zip(xs, ys) if abs(x - ticks[rm]) < 0.5}  # noqa: E731
    assert near("length-longer") == {1.0}, "every marker and CI end at 100% under each strategy"
    assert ax["lines"]["a perfect RM (chosen longer)"][1][0] == 8 / 15, "q0, q2, ..., q14: chosen the longer"
