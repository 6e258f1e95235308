"""The headline's test against chance (tasks/stages/chance.py) by hand: exact one-sided binomial p-values, ties
per the tie policy, Holm over a strategy's contestants only (null baselines and positive controls are not in
the family), the fewest pairs a perfect score needs; and the headline built from a leaderboard of 100 extra
`kind: random` RMs, four of them 6 of 6 right: no null RM is crowned, the top of 103 on 6 pairs is never
"best", and the null baselines are one summary. Fast: the stage's functions on hand-made scores."""
from math import comb

import pytest

from tasks.ops.report import board, headline
from tasks.stages import chance, leaderboard
from tests import scale_report

P = {"tie_policy": "strict", "bootstrap": 20, "ci": 0.95, "split": "test", "heatmap_strategy": "none"}


def _score(rm, i, outcome, strategy="none"):
    cs, cr = {"right": (1.0, 0.0), "wrong": (0.0, 1.0), "tie": (0.5, 0.5), "invalid": (None, 0.0)}[outcome]
    bad = cs is None
    return {"rm": rm, "benchmark": "personalised", "rm_kind": "test", "rm_identity": f"test:{rm}", "strategy": strategy,
            "question_id": f"q{i}", "domain": "Art", "split": "test", "score_chosen": cs, "score_rejected": cr,
            "correct": not bad and cs > cr, "tie": not bad and cs == cr, "invalid": bad, "truncated": False,
            "order_consistent": None, "input_hash_chosen": "h", "input_hash_rejected": "h"}


def _scores(rm, **counts):
    outcomes = [o for o in ("right", "wrong", "tie", "invalid") for _ in range(counts.get(o, 0))]
    return [_score(rm, i, o) for i, o in enumerate(outcomes)]


def _upper_tail(k, n):
    return sum(comb(n, j) for j in range(k, n + 1)) / 2 ** n


def test_binomial_p_is_the_exact_upper_tail():
    assert chance.binomial_p(6, 0) == 1 / 64                       # 6 of 6: 0.5^6
    assert chance.binomial_p(5, 1) == pytest.approx(7 / 64)         # C(6,5) + C(6,6) of 64
    assert chance.binomial_p(12, 3) == pytest.approx(576 / 32768)   # 455 + 105 + 15 + 1 of 2^15
    assert chance.binomial_p(3, 3) == pytest.approx(42 / 64)        # at chance: well above any alpha
    assert chance.binomial_p(0, 0) == 1.0                           # nothing tested: no evidence
    for k, n in ((9, 10), (20, 30), (0, 4)):
        assert chance.binomial_p(k, n - k) == pytest.approx(_upper_tail(k, n))


def test_holm_over_the_contestants_only():
    rms = {"a": {"kind": "seq-cls"}, "b": {"kind": "bradley-terry"}, "c": {"kind": "similarity"},
           "coin": {"kind": "random"}, "rung": {"kind": "mixture", "weight": 1.0}}
    scores = (_scores("a", right=6) + _scores("b", right=12, wrong=3) + _scores("c", right=3, wrong=3)
              + _scores("coin", right=6) + _scores("rung", right=15))
    out = chance.chance_tests(scores, P, leaderboard.credits, rms)
    tests = out["tests"]["none"]
    assert set(tests["rms"]) == {"a", "b", "c"}, "a null baseline and a positive control are no contestants"
    assert (tests["contestants"], tests["min_pairs"], out["alpha"]) == (3, 6, 0.05)
    a, b, c = (tests["rms"][rm] for rm in "abc")
    assert (a["p"], b["p"], c["p"]) == (0.015625, round(576 / 32768, 6), 0.65625)
    # Holm, by hand: a's p is the smallest, times 3 = 0.046875; b's times 2 = 0.035, kept monotone at 0.046875;
    # c's times 1. a is above chance picked from 3 (0.015625 < 0.05 / 3 too: the top tested at alpha / m)
    assert (a["p_holm"], b["p_holm"], c["p_holm"]) == (0.046875, 0.046875, 0.65625)
    assert (a["above_chance"], b["above_chance"], c["above_chance"]) == (True, True, False)
    four = chance.chance_tests(scores + _scores("d", right=6), P, leaderboard.credits, {**rms, "d": {"kind": "seq-cls"}})
    assert four["tests"]["none"]["rms"]["a"]["p_holm"] == 0.0625 and not four["tests"]["none"]["rms"]["a"]["above_chance"], \
        "one more contestant: 6 of 6 picked from 4 no longer beats chance"


@pytest.mark.parametrize("policy, expected", [
    ("strict", {"right": 5, "wrong": 2, "left_out": 0, "p": round(_upper_tail(5, 7), 6)}),   # a tie is wrong
    ("half", {"right": 5, "wrong": 1, "left_out": 1, "p": 0.109375}),    # credit 0.5 has no sign: out of the test
    ("drop", {"right": 5, "wrong": 1, "left_out": 0, "p": 0.109375}),    # never counted
])
def test_ties_follow_the_tie_policy_and_invalid_is_always_wrong(policy, expected):
    scores = _scores("a", right=5, tie=1, invalid=1)
    t = chance.chance_tests(scores, {**P, "tie_policy": policy}, leaderboard.credits, None)["tests"]["none"]["rms"]["a"]
    assert {k: t[k] for k in expected} == expected


def test_min_pairs_is_the_fewest_a_perfect_score_needs():
    assert [chance.min_pairs(m, 0.05) for m in (1, 3, 103)] == [5, 6, 12]
    for alpha in (0.05, 0.0625, 0.125, 0.01):   # 0.0625 and 0.125: m / alpha a power of two, the boundary exact
        for m in range(1, 400):
            n = chance.min_pairs(m, alpha)
            assert m * 0.5 ** n < alpha <= m * 0.5 ** (n - 1), (m, alpha)
    assert (chance.min_pairs(1, 0.0625), chance.min_pairs(2, 0.125)) == (5, 5), "0.5^4 = alpha is not below alpha"


def test_above_chance_is_strictly_below_alpha_and_the_record_says_how(monkeypatch):
    import scipy.stats

    class Exactly:
        pvalue = 0.05
    monkeypatch.setattr(scipy.stats, "binomtest", lambda *a, **k: Exactly())
    scores = _scores("a", right=6)
    for policy in ("strict", "half", "drop"):
        out = chance.chance_tests(scores, {**P, "tie_policy": policy}, leaderboard.credits, None)
        t = out["tests"]["none"]["rms"]["a"]
        assert t["p_holm"] == 0.05 and t["above_chance"] is False, "p (Holm) = alpha is not below it"
        assert out["method"] == chance.METHOD and out["ties"] == chance.TIES[policy]
    Exactly.pvalue = 0.0499
    assert chance.chance_tests(scores, P, leaderboard.credits, None)["tests"]["none"]["rms"]["a"]["above_chance"]
    # the level is 1 - ci as a person wrote it: to 10 decimals, without float noise
    assert chance.chance_tests([], {**P, "ci": 0.95000000001}, leaderboard.credits, None)["alpha"] == 0.05


def _headline(extra: int, kind: str = "random"):
    params = scale_report.params_with(extra)
    rms = {rm: (e if not rm.startswith("random-") else {"kind": kind}) for rm, e in params["scoring"]["rms"].items()}
    scores = [scale_report._score(rm, s, i, right) for rm in rms for s in params["scoring"]["strategies"]
              for i, right in enumerate(scale_report.outcomes(rm, s, perfect=4))]
    rows = leaderboard.leaderboard_rows(scores, P, 1)
    metrics = leaderboard.leaderboard_metrics(rows, scores, P, rms)
    nulls = {rm for rm, e in rms.items() if e["kind"] in ("random", "length-longer", "length-shorter")}
    controls = {rm for rm, e in rms.items() if e["kind"] == "mixture"}
    return headline.headline(board.leaderboard(rows, [], metrics, controls, nulls), rms), metrics


def test_no_null_rm_is_crowned_among_100_random_rms_at_100_percent():
    top, metrics = _headline(100)
    assert all(metrics["rms"][scale_report.extra_name(i)][s]["micro"]["accuracy"] == 1.0
               for i in range(4) for s in ("none", "raw_profile", "planner")), "four random RMs got 6 of 6 right"
    cards = top["best"] + top["oracle"]
    assert [c["rms"] for c in cards] == [["bradley-terry"]] * 4, "the best contestant, never a null baseline or control"
    assert not any(c["holds"] for c in cards)
    assert cards[0]["vs_chance"] == "not above chance: 5 of 6 right, p (Holm over 3 contestants) 0.328"
    nulls = top["nulls"]
    assert (nulls["count"], nulls["kinds"]) == (103, "length-longer, length-shorter, random × 101")
    assert [r["strategy"] for r in nulls["ranges"]] == ["none", "raw_profile", "planner", "oracle (upper bound)"]
    assert all(r["text"].endswith("–100.0%") and r["rms"] == 103 for r in nulls["ranges"]), "one range, not 412 entries"


def test_the_top_of_103_contestants_on_6_pairs_is_never_best():
    top, _ = _headline(100, kind="seq-cls")   # the same hundred coins, now as contestants
    card = top["best"][0]
    assert card["rms"][:4] == [scale_report.extra_name(i) for i in range(4)] and card["accuracy"] == "100.0%"
    assert not card["holds"] and len(card["labelled"]) <= headline.NAMES_SHOWN + 1   # "and N more" past five names
    assert card["vs_chance"].startswith("too few pairs to beat chance: 6 of 6 right, p (Holm over 103 contestants)")
    assert card["vs_chance"].endswith("that takes 12 tested pairs") and card["runner_up"] == "tied"


def test_a_top_rm_above_chance_and_its_runner_up_is_best():
    rms = {"a": {"kind": "seq-cls"}, "b": {"kind": "seq-cls"}, "c": {"kind": "seq-cls"}, "coin": {"kind": "random"}}
    scores = [_score("a", i, "right") for i in range(15)]
    scores += [_score("b", i, "right" if i < 3 else "wrong") for i in range(15)]
    scores += [_score("c", i, "right" if i < 2 else "wrong") for i in range(15)]
    scores += [_score("coin", i, "right" if i < 8 else "wrong") for i in range(15)]
    rows = leaderboard.leaderboard_rows(scores, P, 1)
    lb = board.leaderboard(rows, [], leaderboard.leaderboard_metrics(rows, scores, P, rms), nulls={"coin"})
    (card,) = headline.headline(lb, rms)["best"]
    assert card["rms"] == ["a"] and card["holds"], card   # 15 of 15: p 3e-5 x 3; 12 discordant pairs vs the coin
    assert card["vs_chance"] == "above chance: 15 of 15 right, p (Holm over 3 contestants) < 0.001"
    by_rm = {r["rm"]: r["cells"] for r in lb["rows"]}
    assert by_rm["coin"][11]["text"] == "not tested: null baseline"
    assert by_rm["b"][11]["text"] == "3 of 15 right, p 1.000 (not above chance)"


def test_above_the_runner_up_but_not_above_chance_is_not_best():
    """Under `half`, 6 right and 9 ties is 70% and beats a runner-up at 0% on all 15 pairs (p (Holm) < 0.001),
    but only the 6 signed pairs test against chance: 0.5^6 = 0.016, times 4 contestants = 0.0625."""
    half = {**P, "tie_policy": "half"}
    rms = {rm: {"kind": "seq-cls"} for rm in "abcd"}
    scores = [_score("a", i, "right" if i < 6 else "tie") for i in range(15)]
    scores += [_score(rm, i, "wrong") for rm in "bcd" for i in range(15)]
    rows = leaderboard.leaderboard_rows(scores, half, 1)
    lb = board.leaderboard(rows, [], leaderboard.leaderboard_metrics(rows, scores, half, rms))
    (card,) = headline.headline(lb, rms)["best"]
    assert card["rms"] == ["a"] and card["above_runner_up"] and not card["above_chance"] and not card["holds"]
    assert card["vs_chance"] == ("too few pairs to beat chance: 6 of 6 right, 9 ties left out, p (Holm over 4 "
                                 "contestants) 0.062; even all 6 right could not, picked from 4: that takes 7 tested pairs")
