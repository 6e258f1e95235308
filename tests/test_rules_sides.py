"""The two sides of a correlation as docs/statistics.md states them (tasks/downstream/correlation/sides.py),
by hand: a benchmark's accuracy is the mean credit of its questions and its worst-domain accuracy the lowest
domain mean, both recomputed in every resample; a fixed number repeats; only the asked strategy, split and
benchmarks are read, ties per the policy; list benchmarks fall back to `none` and never share an item id;
null baselines by kind, never by name; an external table refused row by row, naming file, row and field."""
from __future__ import annotations

import numpy as np
import pytest

from tasks.core.artifacts import write_table
from tasks.core.errors import ConfigError, DataError, DataErrors
from tasks.downstream.correlation import sides as S


def _side():
    s = S.Side("b", "scores")
    s.per_question = {"a": {"q1": 1.0, "q2": 0.0, "q3": 1.0, "q4": 1.0}, "b": {"q1": 0.0, "q3": 1.0}}
    s.domains = {"q1": "art", "q2": "art", "q3": "law", "q4": "law"}
    s.fixed = {"ext": 0.42}
    return s


def test_a_value_is_the_mean_credit_or_the_lowest_domain_mean_or_the_fixed_number():
    s = _side()
    assert s.value("a") == 0.75 and s.value("a", "accuracy") == 0.75
    assert s.value("a", "worst_domain") == 0.5, "art: (1 + 0) / 2, law: 1"
    assert s.value("b", "worst_domain") == 0.0
    assert s.value("ext") == 0.42 and s.value("ext", "worst_domain") == 0.42
    assert s.rms() == {"a", "b", "ext"}


def test_worst_domain_needs_per_question_values_in_more_than_one_domain():
    s = _side()
    assert s.predictors() == ("accuracy", "worst_domain")
    s.domains = {q: "art" for q in s.domains}
    assert s.predictors() == ("accuracy",)
    fixed = S.Side("t", "table.csv", fixed={"a": 1.0})
    assert fixed.predictors() == ("accuracy",)


def test_draws_reaverage_each_resample_and_repeat_a_fixed_number():
    s = _side()
    questions = ["q1", "q2", "q3", "q4"]
    w = np.array([[1, 1, 1, 1], [2, 0, 0, 2], [0, 3, 1, 0]], dtype=float)
    acc = s.draws(["a", "b"], questions, w)
    assert acc[:, 0] == pytest.approx([0.75, 1.0, 0.25])
    assert acc[0, 1] == pytest.approx(0.5) and acc[1, 1] == pytest.approx(0.0) and acc[2, 1] == pytest.approx(1.0)
    worst = s.draws(["a", "b"], questions, w, "worst_domain")
    # resample 2 draws q2 three times and q3 once: art = 0, law = 1 -> 0; resample 1 has no law question of b's
    assert worst[:, 0] == pytest.approx([0.5, 1.0, 0.0])
    assert worst[0, 1] == pytest.approx(0.0) and worst[1, 1] == pytest.approx(0.0)
    assert s.draws(["ext"], questions, w).tolist() == [[0.42]] * 3
    assert S.Side("t", "x", fixed={"a": 1.0, "b": 2.0}).draws(["b", "a"], [], w).tolist() == [[2.0, 1.0]] * 3


def test_a_domain_not_drawn_in_a_resample_is_skipped_not_zero():
    s = _side()
    w = np.array([[1, 1, 0, 0]], dtype=float)   # law not drawn: worst is art's mean
    assert s.draws(["a"], ["q1", "q2", "q3", "q4"], w, "worst_domain")[0, 0] == pytest.approx(0.5)


def _row(rm, qid, right, split="test", strategy="none", benchmark="personalised", domain="Art", tie=False,
         invalid=False, kind="seq-cls"):
    return {"rm": rm, "benchmark": benchmark, "rm_kind": kind, "rm_identity": rm, "strategy": strategy,
            "question_id": qid, "domain": domain, "split": split, "score_chosen": 1.0, "score_rejected": 0.0,
            "correct": right, "tie": tie, "invalid": invalid, "truncated": False, "order_consistent": None,
            "input_hash_chosen": "h", "input_hash_rejected": "h"}


P = {"strategy": "none", "split": "test", "benchmarks": ["personalised"], "tie_policy": "half"}


def test_a_benchmark_reads_only_the_asked_strategy_split_and_benchmarks_ties_per_the_policy(tmp_path):
    rows_a = [_row("a", "q1", True), _row("a", "q2", False, tie=True), _row("a", "q3", True, invalid=True),
              _row("a", "q4", False, domain=None), _row("a", "d1", True, split="dev"),
              _row("a", "q1", False, strategy="planner"), _row("a", "g1", True, benchmark="generic")]
    rows_b = [_row("b", "q1", False, kind="random"), _row("b", "q2", True, kind="random")]
    paths = {rm: str(write_table(rows, tmp_path / f"{rm}.parquet", "scores"))
             for rm, rows in (("a", rows_a), ("b", rows_b))}
    sides = S.load_benchmarks(paths, P)
    assert set(sides) == {"personalised"}
    side = sides["personalised"]
    assert side.per_question["a"] == {"q1": 1.0, "q2": 0.5, "q3": 0.0, "q4": 0.0}
    assert side.per_question["b"] == {"q1": 0.0, "q2": 1.0}
    assert side.kinds == {"a": "seq-cls", "b": "random"}
    assert side.domains == {"q1": "Art", "q2": "Art", "q3": "Art", "q4": "unknown"}
    assert side.source == "scores" and side.name == "personalised"
    strict = S.load_benchmarks(paths, {**P, "tie_policy": "strict"})["personalised"]
    assert strict.per_question["a"]["q2"] == 0.0
    every = S.load_benchmarks(paths, {**P, "split": None})["personalised"]
    assert every.per_question["a"]["d1"] == 1.0
    both = S.load_benchmarks(paths, {**P, "benchmarks": ["personalised", "generic", "none-scored"]})
    assert both["generic"].per_question == {"a": {"g1": 1.0}} and both["none-scored"].per_question == {}
    assert S.load_benchmarks(paths, {**P, "strategy": "planner"})["personalised"].per_question == {"a": {"q1": 0.0}}


def _item(rm, item, strategy="none", subset="chat", correct=True, tie=False, tie_credit=None, invalid=False,
          kind="seq-cls"):
    return {"rm": rm, "benchmark": "rb2", "source": "rewardbench2", "rm_kind": kind, "rm_identity": rm,
            "strategy": strategy, "item_id": item, "subset": subset, "split": "test", "n_correct": 1,
            "n_incorrect": 3, "method": "pointwise", "scores_correct": [1.0], "scores_incorrect": [0.0, 0.0, 0.0],
            "margins": None, "correct": correct, "tie": tie, "tie_credit": tie_credit, "invalid": invalid,
            "chance": 0.25, "truncated": False, "input_hashes": ["h"]}


def test_a_list_benchmark_is_read_under_the_strategy_it_has_else_none_with_prefixed_ids(tmp_path):
    plain = tmp_path / "rb2"
    write_table([_item("a", "1"), _item("a", "2", correct=False, subset=None), _item("a", "3", tie=True, tie_credit=0.25),
                 _item("a", "4", invalid=True)], plain / "a.parquet", "list_scores")
    write_table([_item("z", "1", kind="length-longer")], plain / "z.parquet", "list_scores")
    personal = tmp_path / "prism"
    write_table([_item("a", "1", strategy="none", correct=False), _item("a", "1", strategy="planner")],
                personal / "a.parquet", "list_scores")
    sides = S.load_list_benchmarks({"rb2": str(plain), "prism": str(personal)}, {**P, "strategy": "planner"})
    rb2 = sides["rb2"]
    assert rb2.per_question == {"a": {"rb2:1": 1.0, "rb2:2": 0.0, "rb2:3": 0.25, "rb2:4": 0.0}, "z": {"rb2:1": 1.0}}
    assert rb2.domains == {"rb2:1": "chat", "rb2:2": "all", "rb2:3": "chat", "rb2:4": "chat"}
    assert rb2.kinds == {"a": "seq-cls", "z": "length-longer"} and rb2.source == "bench_scores"
    assert sides["prism"].per_question == {"a": {"prism:1": 1.0}}, "the asked strategy where the benchmark has it"
    strict = S.load_list_benchmarks({"rb2": str(plain)}, {**P, "tie_policy": "strict"})["rb2"]
    assert strict.per_question["a"]["rb2:3"] == 0.0


def test_null_baselines_by_kind_from_the_scores_or_the_params_never_by_name():
    side = _side()
    side.kinds = {"a": "random", "length-longer": "seq-cls"}
    params = {"scoring": {"rms": {"short": {"kind": "length-shorter"}, "plain": {"kind": "seq-cls"}, "bare": None,
                                  "a": {"kind": "seq-cls"}}}}
    assert S.null_baselines({"b": side}, params) == {"a", "short"}, "the scores' kind wins over the params"
    assert S.null_baselines({}, {}) == set()


def test_a_downstream_table_missing_or_short_of_a_column_is_one_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="'bon' needs BoN scores \\(run the bon stage first\\)"):
        S.read_downstream(str(tmp_path / "none.parquet"), "bon", "bon", "BoN scores", ("rm",))
    with pytest.raises(ConfigError, match="run the rl stage first"):
        S.read_downstream(None, "rl", "rl", "RL rows", ("rm",))
    import pyarrow as pa
    import pyarrow.parquet as pq
    path = tmp_path / "bon.parquet"
    pq.write_table(pa.Table.from_pylist([{"rm": "a", "judge_score": 0.5, "extra": 1}]), path)
    assert S.read_downstream(str(path), "bon", "bon", "x", ("judge_score", "rm")) == [{"judge_score": 0.5, "rm": "a"}]
    with pytest.raises(DataError, match="missing column\\(s\\) question_id, k"):
        S.read_downstream(str(path), "bon", "bon", "x", ("rm", "question_id", "k"))


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_an_external_table_becomes_one_fixed_side_per_name(tmp_path):
    csv = _write(tmp_path / "b.csv", "\ufeffrm,benchmark,accuracy\na, RB ,0.5\nb,RB,0.7\na,other,1e-1\n")
    sides = S.load_external("baselines", [csv], reserved=set())
    assert set(sides) == {"RB", "other"} and sides["RB"].fixed == {"a": 0.5, "b": 0.7}
    assert sides["other"].fixed == {"a": 0.1} and sides["RB"].source == csv
    import pyarrow as pa
    import pyarrow.parquet as pq
    pq.write_table(pa.Table.from_pylist([{"rm": "a", "method": "ppo", "score": 3}]), tmp_path / "d.parquet")
    down = S.load_external("downstream_tables", [str(tmp_path / "d.parquet")], reserved=set())
    assert down["ppo"].fixed == {"a": 3.0}


def test_every_problem_of_an_external_table_is_named_at_once(tmp_path):
    bad = _write(tmp_path / "bad.csv", "rm,method,score\n,ppo,1\na,,1\na,bon,1\nb,ppo,x\nc,ppo,inf\nd,ppo,-1\n"
                                       "e,ppo,1\ne,ppo,2\n")
    gone, txt = str(tmp_path / "gone.csv"), _write(tmp_path / "t.txt", "x")
    empty = _write(tmp_path / "empty.csv", "rm,method,score\n")
    cols = _write(tmp_path / "cols.csv", "rm,name\na,b\n")
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"not parquet")
    after = _write(tmp_path / "after.csv", "rm,method,score\n,ppo,1\n")
    with pytest.raises(DataErrors) as caught:
        S.load_external("downstream_tables", [bad, gone, txt, empty, cols, str(broken), after], reserved={"bon"})
    got = [(e.file, e.row, e.row_id, e.field, e.message) for e in caught.value.errors]
    assert got[:8] == [
        (bad, 0, None, "rm", "empty"), (bad, 1, "a", "method", "empty"),
        (bad, 2, "a", "method", "'bon' is computed by the pipeline; give the external one another name"),
        (bad, 3, "b", "score", "not a finite number: 'x'"), (bad, 4, "c", "score", "not a finite number: 'inf'"),
        (bad, 5, "d", "score", "must be >= 0 (it is an NDCG gain), got -1.0"),
        (bad, 7, "e", "rm", f"duplicate (e, ppo); first at {bad} row 6"),
        (gone, None, None, None, "file not found (listed in correlation.downstream_tables)")]
    assert got[8] == (txt, None, None, None, "unsupported format '.txt'; use .csv or .parquet")
    assert got[9] == (empty, None, None, None, "no rows")
    assert got[10:12] == [(cols, None, None, "method", "missing column"), (cols, None, None, "score", "missing column")]
    assert got[12][0] == str(broken) and got[12][4].startswith("unreadable: ")
    assert got[13] == (after, 0, None, "rm", "empty"), "a file after an unreadable one is still checked"
    assert len(got) == 14
    negative = _write(tmp_path / "neg.csv", "rm,benchmark,accuracy\na,RB,-0.5\n")
    assert S.load_external("baselines", [negative], set())["RB"].fixed == {"a": -0.5}, "only a gain must be >= 0"
    missing_value = _write(tmp_path / "none.parquet.csv", "rm,benchmark,accuracy\na,RB,\n")
    with pytest.raises(DataErrors) as caught:
        S.load_external("baselines", [missing_value], set())
    assert [(e.field, e.message) for e in caught.value.errors] == [("accuracy", "not a finite number: ''")]


def test_a_missing_value_in_a_parquet_table_reads_as_empty(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq
    pq.write_table(pa.Table.from_pylist([{"rm": None, "benchmark": "RB", "accuracy": 0.5}]), tmp_path / "n.parquet")
    with pytest.raises(DataErrors) as caught:
        S.load_external("baselines", [str(tmp_path / "n.parquet")], set())
    assert [(e.row, e.field, e.message) for e in caught.value.errors] == [(0, "rm", "empty")]


def test_a_side_is_named_after_its_benchmark_and_a_missing_column_names_the_file(tmp_path):
    folder = tmp_path / "rb2"
    folder.mkdir()
    assert S.load_list_benchmarks({"rb2": str(folder)}, P)["rb2"].name == "rb2"
    table = S.load_external("baselines", [_write(tmp_path / "b.csv", "rm,benchmark,accuracy\na,RB,0.5\n")], set())
    assert table["RB"].name == "RB"
    import pyarrow as pa
    import pyarrow.parquet as pq
    path = tmp_path / "bon.parquet"
    pq.write_table(pa.Table.from_pylist([{"rm": "a"}]), path)
    with pytest.raises(DataError) as exc:
        S.read_downstream(str(path), "bon", "bon", "x", ("rm", "k"))
    assert exc.value.file == str(path)


def test_an_unreadable_external_file_is_named(tmp_path):
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"not parquet")
    with pytest.raises(DataErrors, match="unreadable"):
        S.load_external("baselines", [str(broken)], set())


def test_a_gain_of_zero_or_below_one_is_a_valid_downstream_score_and_a_negative_one_names_its_field(tmp_path):
    ok = _write(tmp_path / "ok.csv", "rm,method,score\na,ppo,0\nb,ppo,0.5\n")
    assert S.load_external("downstream_tables", [ok], set())["ppo"].fixed == {"a": 0.0, "b": 0.5}
    bad = _write(tmp_path / "bad.csv", "rm,method,score\na,ppo,-0.1\n")
    with pytest.raises(DataErrors, match="row 0.*field 'score'.*must be >= 0"):
        S.load_external("downstream_tables", [bad], set())


def test_an_unsupported_file_is_named_and_a_quoted_line_break_is_kept(tmp_path):
    txt = _write(tmp_path / "t.txt", "x")
    with pytest.raises(DataErrors, match=f"{txt}: unsupported format"):
        S.load_external("baselines", [txt], set())
    crlf = tmp_path / "crlf.csv"
    crlf.write_bytes(b'rm,benchmark,accuracy\r\n"two\r\nlines",RB,0.5\r\n')
    assert S.load_external("baselines", [str(crlf)], set())["RB"].fixed == {"two\r\nlines": 0.5}


def test_worst_domain_over_three_domains_and_an_rm_without_values_draws_nan_quietly():
    s = S.Side("b", "scores")
    s.per_question = {"a": {"q1": 1.0, "q2": 1.0, "q3": 0.0, "q4": 1.0, "q5": 1.0}}
    s.domains = {"q1": "art", "q2": "art", "q3": "law", "q4": "sci", "q5": "sci"}
    w = np.array([[1, 1, 1, 1, 1], [0, 0, 2, 1, 1]], dtype=float)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # a domain not drawn is skipped without a warning reaching the user
        worst = s.draws(["a", "nobody"], ["q1", "q2", "q3", "q4", "q5"], w, "worst_domain")
    assert worst[:, 0] == pytest.approx([0.0, 0.0]), "art 1, law 0, sci 1 -> 0; art not drawn -> law 0"
    assert np.isnan(worst[:, 1]).all()
    assert s.value("a", "worst_domain") == 0.0 and s.value("a") == 0.8
