"""An other benchmark's numbers as `prbench score` and the report state them (tasks/stages/benchmarks/scoring.py),
by hand: accuracy over the counted items (a tie per the policy, invalid wrong), its bootstrap CI seeded per RM,
benchmark, strategy and subset, chance the mean of the items' chance, counts of ties, invalid and truncated; one
estimate per strategy and per subset; the strategies the benchmark allows in its order; chunking changes nothing;
a params entry refused naming its key."""
from __future__ import annotations

import numpy as np
import pytest

from tasks.core.determinism import stable_rng
from tasks.core.errors import ConfigError
from tasks.models.rms.registry import make_rm
from tasks.stages.benchmarks import get, scoring
from tasks.stages.leaderboard import boot_means
from tests.conftest import ROOT

F = ROOT / "data" / "benchmarks" / "fixtures"


def _r(correct, tie=False, invalid=False, truncated=False, chance=0.25, tie_credit=0.5, subset="a", strategy="none",
       method="pointwise"):
    return {"correct": correct, "tie": tie, "invalid": invalid, "truncated": truncated, "chance": chance,
            "tie_credit": tie_credit, "subset": subset, "strategy": strategy, "method": method, "rm": "m",
            "benchmark": "b"}


ROWS = [_r(True), _r(False, chance=0.5), _r(False, tie=True, tie_credit=0.25), _r(True, invalid=True, truncated=True),
        _r(True, truncated=True, chance=0.125)]


@pytest.mark.parametrize("policy, got", [("strict", [1, 0, 0, 0, 1]), ("half", [1, 0, 0.25, 0, 1]),
                                         ("drop", [1, 0, 0, 1])])
def test_an_estimate_is_the_mean_credit_with_its_seeded_bootstrap_ci(policy, got):
    e = scoring.estimate(ROWS, policy, 300, 0.9, 7, "m", "b")
    assert (e["n"], e["counted"], e["ties"], e["invalid"], e["truncated"]) == (5, len(got), 1, 1, 2)
    assert e["chance"] == round((0.25 + 0.5 + 0.25 + 0.25 + 0.125) / 5, 4)
    assert e["accuracy"] == round(float(np.mean(got)), 4)
    means = boot_means(np.asarray(got, dtype=float), stable_rng(7, "m", "b"), 300)
    assert e["ci"] == [round(float(np.quantile(means, 0.05)), 4), round(float(np.quantile(means, 0.95)), 4)]
    assert e["ci"][0] < e["accuracy"] < e["ci"][1]


def test_the_ci_is_rounded_to_four_places():
    rows = [_r(i % 3 == 0) for i in range(7)]
    e = scoring.estimate(rows, "strict", 101, 0.9, 1)
    means = boot_means(np.asarray([1.0 if i % 3 == 0 else 0.0 for i in range(7)]), stable_rng(1), 101)
    lo, hi = np.quantile(means, [0.05, 0.95])
    assert e["ci"] == [round(float(lo), 4), round(float(hi), 4)] and e["accuracy"] == round(3 / 7, 4)
    assert round(float(lo), 4) != round(float(lo), 5) or round(float(hi), 4) != round(float(hi), 5), "a case where it shows"


def test_nothing_counted_has_no_accuracy_and_nothing_scored_no_chance():
    e = scoring.estimate([_r(False, tie=True)], "drop", 100, 0.95, 0)
    assert (e["n"], e["counted"], e["accuracy"], e["ci"]) == (1, 0, None, [None, None]) and e["chance"] == 0.25
    empty = scoring.estimate([], "strict", 100, 0.95, 0)
    assert (empty["n"], empty["chance"], empty["accuracy"], empty["ci"]) == (0, None, None, [None, None])


def test_the_summary_estimates_each_strategy_and_subset_with_its_own_seed():
    rows = ROWS + [_r(True, subset="b", strategy="raw_profile"), _r(False, subset="c", strategy="raw_profile",
                                                                    method="pairwise-each")]
    bench = get("generic")
    m = scoring.summary(rows, bench, {"tie_policy": "half", "bootstrap": 200, "ci": 0.8}, 3)
    assert (m["tie_policy"], m["ci_level"]) == ("half", 0.8) and list(m["strategies"]) == ["none", "raw_profile"]
    none, raw = m["strategies"]["none"], m["strategies"]["raw_profile"]
    assert {k: v for k, v in none.items() if k not in ("method", "subsets", "published")} == \
        scoring.estimate(ROWS, "half", 200, 0.8, 3, "m", "b", "none")
    assert none["subsets"] == {"a": scoring.estimate(ROWS, "half", 200, 0.8, 3, "m", "b", "none", "a")}
    assert list(raw["subsets"]) == ["b", "c"] and raw["method"] == ["pairwise-each", "pointwise"]
    assert none["method"] == ["pointwise"] and none["published"] == bench.metrics(ROWS, "half")


def test_contexts_are_empty_or_the_profile_and_other_strategies_are_refused():
    from tasks.stages.benchmarks.base import format_profile

    _, items = scoring.load("prism", {"source": "prism", "path": str(F / "prism")})
    assert scoring.contexts(items, "none") == [""] * len(items)
    assert scoring.contexts(items, "raw_profile") == [format_profile(i.profile) for i in items]
    with pytest.raises(ConfigError, match="strategy 'planner': external benchmarks are scored with none / raw_profile"):
        scoring.contexts(items, "planner")


def test_scoring_covers_every_allowed_strategy_in_order_and_chunking_changes_nothing():
    rm = make_rm("length-longer", {"kind": "length-longer"}, None)
    bench, items = scoring.load("prism", {"source": "prism", "path": str(F / "prism")})
    whole = scoring.score(rm, "mine", bench, items)
    assert whole == scoring.score(rm, "mine", bench, items, chunk_size=1)
    assert [r["strategy"] for r in whole] == [s for s in bench.strategies() for _ in items]
    assert {(r["rm"], r["benchmark"], r["source"], r["rm_kind"]) for r in whole} == {
        ("length-longer", "mine", "prism", "length-longer")}
    assert {r["rm_identity"] for r in whole} == {rm.identity()}
    only = scoring.score(rm, "mine", bench, items, strategies=["raw_profile", "planner"])
    assert {r["strategy"] for r in only} == {"raw_profile"} and len(only) == len(items)


@pytest.mark.parametrize("entry, says", [
    ("rb2.jsonl", "benchmarks.x: a mapping like {source: rewardbench2, path: ...}, got 'rb2.jsonl'"),
    ({"source": "generic", "paht": "p", "zz": 1}, "benchmarks.x.paht: unknown key; valid: source, path, hub_id"),
    ({"path": "p"}, "benchmarks.x.source: missing (one of the registered benchmarks)"),
    ({"source": "rewardbench3"}, "did you mean 'rewardbench2'"),
])
def test_a_params_entry_is_refused_naming_its_key(entry, says):
    with pytest.raises(ConfigError) as exc:
        scoring.check_entry("x", entry)
    assert says in str(exc.value)
    assert scoring.check_entry("x", {"source": "generic", "limit": 3}) == {"source": "generic", "limit": 3}


def test_an_entry_with_no_items_is_refused(tmp_path):
    empty = tmp_path / "generic.jsonl"
    empty.write_text(" \n")
    with pytest.raises(ConfigError, match="benchmarks.mine: no items to score"):
        scoring.load("mine", {"source": "generic", "path": str(empty)})


def test_the_printed_table():
    rm = make_rm("length-longer", {"kind": "length-longer"}, None)
    bench, items = scoring.load("rewardbench2", {"source": "rewardbench2", "path": str(F / "rewardbench2.jsonl")})
    m = scoring.summary(scoring.score(rm, "rb2", bench, items), bench, {"tie_policy": "strict", "bootstrap": 50,
                                                                        "ci": 0.95}, 0)
    lines = scoring.format_summary("rb2", "length-longer", m).splitlines()
    assert lines[0] == "rb2 / length-longer  (tie policy strict, 95% bootstrap CI)"
    assert lines[1].split() == ["strategy", "/", "subset", "accuracy", "CI", "chance", "n", "ties", "invalid"]
    e = m["strategies"]["none"]
    assert lines[2].split()[:4] == ["none", "(all)", f"{e['accuracy']:.3f}", f"[{e['ci'][0]:.3f},"]
    assert lines[2].split()[5:] == [f"{e['chance']:.3f}", str(e["n"]), str(e["ties"]), str(e["invalid"])]
    assert [ln.split()[0] for ln in lines[3:6]] == list(e["subsets"])
    assert lines[6].startswith(f"  published ({bench.rule}): ") and "subsets.Ties 1.0096" in lines[6]
    pub = {k: v for k, v in e["published"].items() if k != "rule"}
    flat = [k for k, v in pub.items() if not isinstance(v, dict)] + [f"{k}.{kk}" for k, v in pub.items()
                                                                     if isinstance(v, dict) for kk in v]
    shown = [item.rsplit(" ", 1)[0] for item in lines[6][len(f"  published ({bench.rule}): "):].split(", ")]
    assert sorted(shown) == sorted(flat), "nested numbers by their dotted path, the rule once in brackets"
    assert scoring.format_summary("b", "r", {"tie_policy": "drop", "ci_level": 0.9, "strategies": {"none": {
        **scoring.estimate([_r(False, tie=True)], "drop", 10, 0.9, 0), "method": ["pairwise-each"], "subsets": {},
        "published": {}}}}).splitlines()[2].split()[:4] == ["none", "(all)", "-", "-"]
    two = scoring.format_summary("b", "r", {"tie_policy": "drop", "ci_level": 0.9, "strategies": {"none": {
        **scoring.estimate([_r(True), _r(False)], "drop", 10, 0.9, 0), "method": ["pairwise-each", "pointwise"],
        "subsets": {}, "published": {"score": 0.5, "n": {"a": 1}}}}}).splitlines()
    assert two[2].endswith("  [pairwise-each, pointwise]")
    e2 = scoring.estimate([_r(True), _r(False)], "drop", 10, 0.9, 0)
    assert f"[{e2['ci'][0]:.3f}, {e2['ci'][1]:.3f}]" in two[2]
    assert two[3] == "  published (its own rule): score 0.5, n.a 1"


def test_scoring_shows_progress_that_reaches_its_total(monkeypatch):
    seen = []

    class Bar:
        def __init__(self, **kw):
            self.kw, self.n = kw, 0
            seen.append(self)

        def __enter__(self):
            return self

        def __exit__(self, *a):
            return False

        def update(self, n):
            self.n += n

    monkeypatch.setattr(scoring, "progress_bar", lambda **kw: Bar(**kw))
    rm = make_rm("length-longer", {"kind": "length-longer"}, None)
    bench, items = scoring.load("prism", {"source": "prism", "path": str(F / "prism")})
    scoring.score(rm, "mine", bench, items, chunk_size=2)
    (bar,) = seen
    assert bar.kw == {"total": len(items) * len(bench.strategies()), "desc": "mine length-longer", "unit": "item"}
    assert bar.n == bar.kw["total"] and len(bench.strategies()) == 2


def test_an_unknown_subset_is_named_by_the_entry_key_or_the_one_given(tmp_path):
    entry = {"source": "generic", "path": str(F / "generic.jsonl"), "subset": "nope"}
    with pytest.raises(ConfigError, match=r"^benchmarks\.mine\.subset: no subset 'nope'"):
        scoring.load("mine", entry)
    with pytest.raises(ConfigError, match=r"^--subset: no subset 'nope'"):
        scoring.load("mine", entry, subset_key="--subset")


def test_a_strategy_with_a_single_item_is_summarised():
    m = scoring.summary([_r(True)], get("generic"), {"tie_policy": "strict", "bootstrap": 20, "ci": 0.9}, 0)
    assert m["strategies"]["none"]["accuracy"] == 1.0 and m["strategies"]["none"]["n"] == 1


def test_every_key_of_an_entry_reaches_the_importer(monkeypatch):
    calls = []
    bench = get("generic")
    monkeypatch.setattr(type(bench), "load", lambda self, *a, **kw: calls.append((a, kw)) or ["item"])
    entry = {"source": "generic", "hub_id": "org/data", "revision": "abc123", "subset": "chat", "limit": 5}
    got, items = scoring.load("mine", entry)
    assert items == ["item"] and got.name == "generic"
    assert calls == [((None, "org/data", "chat", 5), {"subset_key": "benchmarks.mine.subset", "revision": "abc123"})]


def test_each_subset_draws_its_own_seeded_resamples():
    rows = [_r(i % 3 != 0, subset="a") for i in range(13)] + [_r(True, subset="b")]
    m = scoring.summary(rows, get("generic"), {"tie_policy": "strict", "bootstrap": 101, "ci": 0.83}, 5)
    a = m["strategies"]["none"]["subsets"]["a"]
    assert a == scoring.estimate(rows[:13], "strict", 101, 0.83, 5, "m", "b", "none", "a")
    assert a["ci"] != scoring.estimate(rows[:13], "strict", 101, 0.83, 5, "m", "b", "none")["ci"], "a case where it shows"
