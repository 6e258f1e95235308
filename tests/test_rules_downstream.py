"""Downstream rules as properties over generated inputs: a failed RM score is the worst pick in Best-of-N and
the worst reward in RL (never skipped, never a default that can beat a real answer), best-of-k by hand on a
tie, and the split-half design (the benchmark half and the downstream half never share a question; BoN, RL
evaluation and pair selection read only their own half)."""
from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tasks.core import halves
from tasks.downstream.bon.select import best_of_k, first_k_pick, pick_probabilities, pool_size, rank_key, usable
from tasks.downstream.rl.reward import REWARD, RewardFailures, RMReward

FAST = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FAILED = st.sampled_from([None, math.nan, math.inf, -math.inf])


# --- Best-of-N -------------------------------------------------------------------------------------------

def test_best_of_k_by_hand_on_a_tie():
    cands = [(0, 0.9), (1, 0.9), (2, 0.1)]
    judge = {0: 1.0, 1: 0.0, 2: 0.4}
    # k = 2: subsets {0,1} (tie: 0.5), {0,2} -> 1.0, {1,2} -> 0.0; mean 0.5
    assert best_of_k(cands, judge, 2, "expected") == pytest.approx(0.5)
    # k = 1: the mean judge score
    assert best_of_k(cands, judge, 1, "expected") == pytest.approx(1.4 / 3)
    # first_k: the earliest of the tied best
    assert first_k_pick(cands, 2) == 0 and best_of_k(cands, judge, 2, "first_k") == 1.0
    assert first_k_pick([(1, 0.9), (0, 0.9)], 2) == 0, "earliest by sample index, whatever the list order"
    # k above N: the best of everything there is
    assert best_of_k(cands, judge, 9, "expected") == pytest.approx(0.5)
    assert pool_size(cands, 2, "first_k") == 2 and pool_size(cands, 2, "expected") == 3


def _rule_pick(subset, judge):
    """The documented rule, plainly: any finite score beats every failure; the highest finite score wins,
    ties split evenly; with no finite score the pick is the worst candidate by the judge (ties split)."""
    finite = [(i, s) for i, s in subset if usable(s)]
    if finite:
        top = max(s for _, s in finite)
        won = [i for i, s in finite if s == top]
    else:
        worst = min(judge[i] for i, _ in subset)
        won = [i for i, _ in subset if judge[i] == worst]
    return sum(judge[i] for i in won) / len(won)


@FAST
@given(st.lists(st.tuples(st.one_of(st.sampled_from([0.0, 1.0, 2.0]), FAILED), st.sampled_from([0.0, 0.5, 1.0, 2.0])),
                min_size=1, max_size=7), st.integers(1, 8))
def test_a_failed_score_is_the_worst_pick_never_skipped(rows, k):
    judge = {i: j for i, (_, j) in enumerate(rows)}
    cands = [(i, rank_key(s, judge[i])) for i, (s, _) in enumerate(rows)]
    kk = min(k, len(rows))
    subsets = list(itertools.combinations([(i, s) for i, (s, _) in enumerate(rows)], kk))
    want = sum(_rule_pick(s, judge) for s in subsets) / len(subsets)
    assert best_of_k(cands, judge, k, "expected") == pytest.approx(want, abs=1e-12)
    probs = pick_probabilities(cands, k)
    assert set(probs) == set(judge), "every candidate stays in the pool"
    assert sum(probs.values()) == pytest.approx(1.0)
    failed = [i for i, (s, _) in enumerate(rows) if not usable(s)]
    finite = [i for i in judge if i not in failed]
    # a failure is picked exactly when the subset has no finite score
    no_finite = math.comb(len(failed), kk) / math.comb(len(rows), kk)
    assert sum(probs[i] for i in failed) == pytest.approx(no_finite, abs=1e-12)
    if finite and failed:
        assert rank_key(None, 0.0) < rank_key(-1e300, 2.0), "any finite score ranks above any failure"
    # first_k: the pick among the first k is never a failure when a finite one is there
    pick = first_k_pick(cands, k)
    first = [i for i in range(min(k, len(rows)))]
    if any(i in finite for i in first):
        assert pick in finite


def test_among_failures_the_worst_by_the_judge_is_picked():
    judge = {0: 0.9, 1: 0.1, 2: 0.5}
    cands = [(i, rank_key(None, judge[i])) for i in judge]
    assert best_of_k(cands, judge, 3, "expected") == pytest.approx(0.1)
    assert first_k_pick(cands, 3) == 1 and best_of_k(cands, judge, 3, "first_k") == 0.1
    mixed = [(0, rank_key(0.2, 0.9)), (1, rank_key(float("nan"), 0.1)), (2, rank_key(None, 2.0))]
    assert best_of_k(mixed, {0: 0.9, 1: 0.1, 2: 2.0}, 3, "expected") == pytest.approx(0.9), "the finite one wins"


# --- RL: a failed reward is the worst, even in steps with several finite rewards --------------------------

class Scripted:
    """An RM whose step scores are given: None raises for the whole call, a list gives those scores."""
    name, kind = "scripted", "random"

    def __init__(self, steps):
        self.steps = list(steps)

    def score_answers(self, items):
        from tasks.models.rms.base import AnswerScore

        values = self.steps.pop(0)
        if values is None:
            raise RuntimeError("RM server down")
        return [AnswerScore(v) for v in values]


def _reference(steps_q, steps_v):
    """The documented rule: the lowest finite reward of the same question in the step, else of the step,
    else of the run so far (never a default)."""
    out, lowest = [], None
    for qs, vs in zip(steps_q, steps_v):
        vs = [None] * len(qs) if vs is None else vs
        fin = [(q, v) for q, v in zip(qs, vs) if v is not None and math.isfinite(v)]
        step_min = min((v for _, v in fin), default=None)
        if fin:
            lowest = min(step_min, lowest) if lowest is not None else step_min
        got = []
        for q, v in zip(qs, vs):
            if v is not None and math.isfinite(v):
                got.append(v)
                continue
            same = [x for qq, x in fin if qq == q]
            got.append(min(same) if same else step_min if step_min is not None else lowest)
        out.append(got)
    return out


@st.composite
def reward_steps(draw):
    n_steps = draw(st.integers(1, 4))
    qs, vs = [], []
    for i in range(n_steps):
        size = draw(st.integers(1, 6))
        qs.append(draw(st.lists(st.sampled_from(["q", "r", "s"]), min_size=size, max_size=size)))
        # the first step always has a finite reward (else the run rightly stops: tested below)
        value = st.floats(-5, 5) if i == 0 else st.one_of(st.floats(-5, 5), FAILED)
        step = draw(st.lists(value, min_size=size, max_size=size)) if i == 0 or draw(st.integers(0, 5)) else None
        if i == 0:
            step[0] = draw(st.floats(-5, 5))
        vs.append(step)
    return qs, vs


@FAST
@given(reward_steps())
def test_a_failed_reward_is_the_lowest_finite_of_its_question_else_step_else_run(steps):
    qs, vs = steps
    reward = RMReward(Scripted(vs), {q: q for q in "qrs"}, {q: "" for q in "qrs"}, max_failures=10 ** 6)
    want = _reference(qs, vs)
    for step_q, step_v, expect in zip(qs, vs, want):
        got = reward(step_q, [f"answer {i}" for i in range(len(step_q))])
        assert got == pytest.approx(expect)
        finite = [v for v in (step_v or []) if v is not None and math.isfinite(v)]
        ok = lambda v: v is not None and math.isfinite(v)  # noqa: E731
        step_v = step_v or [None] * len(got)
        failed = [(q, g) for q, g, v in zip(step_q, got, step_v) if not ok(v)]
        for q, g in failed:   # never above a real answer: its own question's, else any of the step's
            own = [v for q2, v in zip(step_q, step_v) if q2 == q and ok(v)]
            assert all(g <= v for v in (own or finite))
        assert reward.steps[-1].failures == len(failed)
        assert reward.steps[-1].values == pytest.approx(finite)


def test_several_finite_rewards_per_question_by_hand():
    vs = [[3.0, 1.0, math.nan, 5.0, 4.0, None]]
    reward = RMReward(Scripted(vs), {q: q for q in "qr"}, {q: "" for q in "qr"}, max_failures=9)
    got = reward(["q", "q", "q", "r", "r", "r"], list("abcdef"))
    assert got == [3.0, 1.0, 1.0, 5.0, 4.0, 4.0], "each failure: the lowest finite of its own question"
    step = reward.steps[0]
    assert (step.rollouts, step.failures) == (6, 2)
    assert step.mean == pytest.approx(13 / 4) and step.values == [3.0, 1.0, 5.0, 4.0]
    reward = RMReward(Scripted([[2.0, 7.0, math.nan]]), {q: q for q in "qrs"}, {q: "" for q in "qrs"}, 9)
    assert reward(["q", "r", "s"], list("abc")) == [2.0, 7.0, 2.0], "no finite for s: the step's lowest"
    reward.rm.steps.append([math.inf, 9.0])
    assert reward(["s", "s"], list("ab")) == [9.0, 9.0]
    reward.rm.steps.append(None)
    assert reward(["q"], ["x"]) == [2.0], "a failed call: the run's lowest so far"


def test_the_failure_budget_and_no_worst_yet_stop_the_run():
    reward = RMReward(Scripted([[1.0, math.nan], [math.nan]]), {"q": "q"}, {"q": ""}, max_failures=1)
    assert reward(["q", "q"], ["a", "b"]) == [1.0, 1.0]
    with pytest.raises(RewardFailures, match="2 failed reward"):
        reward(["q"], ["c"])
    with pytest.raises(RewardFailures, match="no finite reward yet"):
        RMReward(Scripted([[math.nan]]), {"q": "q"}, {"q": ""}, max_failures=5)(["q"], ["a"])
    exact = RMReward(Scripted([[1.0, math.nan]]), {"q": "q"}, {"q": ""}, max_failures=1)
    assert exact(["q", "q"], ["a", "b"]) == [1.0, 1.0], "exactly the budget: still running"


def test_the_release_fidelity_turns_a_failure_into_a_middling_half():
    assert REWARD["release"](None) == 0.5 and REWARD["release"](math.nan) == 0.5 and REWARD["release"](7.0) == 0.7
    assert REWARD["corrected"](7.0) == 7.0 and REWARD["corrected"](math.inf) is None


# --- split halves ----------------------------------------------------------------------------------------

@st.composite
def question_sets(draw):
    rows = []
    for split in draw(st.lists(st.sampled_from(["test", "validation", "train"]), min_size=1, max_size=3, unique=True)):
        for domain in draw(st.lists(st.sampled_from(["A", "B", "C"]), min_size=1, max_size=3, unique=True)):
            rows += [{"id": f"{split}-{domain}-{i}", "split": split, "domain": domain}
                     for i in range(draw(st.integers(1, 9)))]
    return rows


@FAST
@given(question_sets(), st.sampled_from([0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0]), st.integers(0, 10 ** 6))
def test_halves_never_share_a_question_and_take_the_rounded_down_share(questions, share, seed):
    rows = halves.assign(questions, share, seed)
    assert [r["question_id"] for r in rows] == [q["id"] for q in questions], "one row per question, in order"
    by_id = {r["question_id"]: r["half"] for r in rows}
    bench = halves.keep(questions, by_id, halves.BENCHMARK)
    down = halves.keep(questions, by_id, halves.DOWNSTREAM)
    if share > 0:
        test_like = {q["id"] for q in questions if q["split"] != "train"}
        assert not ({q["id"] for q in bench} & {q["id"] for q in down}) & test_like, "no evaluation question in both"
    for (split, domain) in {(q["split"], q["domain"]) for q in questions}:
        group = [q["id"] for q in questions if (q["split"], q["domain"]) == (split, domain)]
        got = [by_id[q] for q in group]
        if split == "train" or share == 0:
            assert set(got) == {halves.BOTH}
            continue
        n_down = min(int(share * len(group)), len(group) - 1)
        assert got.count(halves.DOWNSTREAM) == n_down and got.count(halves.BENCHMARK) == len(group) - n_down
    assert halves.assign(questions, share, seed) == rows, "seeded"


def test_keep_treats_an_unknown_question_as_in_both_halves():
    rows = [{"id": "x"}, {"id": "a"}, {"id": "b"}]
    by_id = {"a": halves.BENCHMARK, "b": halves.DOWNSTREAM}
    assert [r["id"] for r in halves.keep(rows, by_id, halves.BENCHMARK)] == ["x", "a"]
    assert [r["id"] for r in halves.keep(rows, by_id, halves.DOWNSTREAM)] == ["x", "b"]


def test_the_order_is_a_hash_of_the_seed_and_the_question_id():
    import hashlib

    qs = [{"id": f"q{i}", "split": "test", "domain": "A"} for i in range(6)]
    rows = halves.assign(qs, 0.5, 7)
    ranked = sorted((q["id"] for q in qs), key=lambda i: hashlib.sha256(f"7:{i}".encode("utf-8")).hexdigest())
    assert {r["question_id"] for r in rows if r["half"] == halves.DOWNSTREAM} == set(ranked[:3])


def test_bon_score_rows_keep_every_sample_its_rm_strategy_and_truncation():
    """sample_rows (bon_score's table): one row per sample, the RM and strategy on each, the score of its
    distinct answer, None for an invalid sample or one the RM gave nothing, truncation as the RM said."""
    from tasks.downstream.bon.select import sample_rows

    samples = [{"question_id": "q", "sample_index": 0, "valid": True, "answer_hash": "a"},
               {"question_id": "q", "sample_index": 1, "valid": True, "answer_hash": "b"},
               {"question_id": "q", "sample_index": 2, "valid": False, "answer_hash": "a"},   # same text, invalid
               {"question_id": "q", "sample_index": 3, "valid": True, "answer_hash": "c"},
               {"question_id": "r", "sample_index": 0, "valid": True, "answer_hash": "a"}]
    by_key = {("q", "a"): (0.7, True), ("q", "b"): (math.nan, False), ("r", "a"): (0.1, False)}
    rows = sample_rows("my-rm", "raw_profile", samples, by_key)
    assert [(r["rm"], r["strategy"]) for r in rows] == [("my-rm", "raw_profile")] * 5
    assert [(r["question_id"], r["sample_index"]) for r in rows] == [(s["question_id"], s["sample_index"]) for s in samples]
    scores = [r["score"] for r in rows]
    assert scores[0] == 0.7 and math.isnan(scores[1]) and scores[2] is None and scores[3] is None and scores[4] == 0.1
    assert [r["truncated"] for r in rows] == [True, False, False, False, False]


def test_the_random_line_is_a_uniform_pick_among_the_first_k_or_all():
    from tasks.downstream.bon.select import uniform_pick

    judge = {0: 0.0, 1: 1.0, 2: 0.5, 3: 0.9}
    assert uniform_pick(judge, 2, "first_k") == pytest.approx(0.5), "samples 0 and 1 only"
    assert uniform_pick(judge, 1, "first_k") == 0.0
    assert uniform_pick(judge, 2, "expected") == pytest.approx(2.4 / 4), "every candidate"
    assert uniform_pick({2: 0.5}, 2, "first_k") is None, "no candidate among the first k"


def test_bon_score_of_an_rm_params_do_not_list_names_the_nearest():
    from tasks.core.errors import ConfigError
    from tasks.downstream.bon.select import plan

    with pytest.raises(ConfigError) as err:
        plan({"scoring": {"rms": {"length-longer": {"kind": "length-longer"}}}}, "length-loner", {})
    assert str(err.value) == ("scoring.rms: unknown name 'length-loner' (did you mean 'length-longer'?); "
                              "valid: length-longer")


def _steps(values_per_step):
    from tasks.downstream.rl.reward import Step

    return [Step(len(v), 0, None, None, values=list(v)) for v in values_per_step]


def test_reward_change_is_the_last_quarter_minus_the_first_with_a_bootstrap_over_rollouts():
    import numpy as np

    from tasks.downstream.rl.reward import reward_change

    assert reward_change(_steps([[1.0]]), np.random.default_rng(0)) is None, "one update: nothing to compare"
    assert reward_change(_steps([[], [1.0]]), np.random.default_rng(0)) is None, "a window without rewards"
    assert reward_change(_steps([[1.0], []]), np.random.default_rng(0)) is None
    two = reward_change(_steps([[1.0, 3.0], [4.0, 6.0]]), np.random.default_rng(0), b=200, ci=0.9)
    assert (two["window_updates"], two["first"], two["last"], two["change"]) == (1, 2.0, 5.0, 3.0)
    assert two["rollouts"] == [2, 2] and two["ci"] == 0.9
    steps = [[float(i), float(i) + 0.5] for i in range(9)]        # 9 updates: windows of 9 // 4 = 2
    got = reward_change(_steps(steps), np.random.default_rng(7), b=500, ci=0.8)
    first, last = np.array([0, 0.5, 1, 1.5]), np.array([7, 7.5, 8, 8.5])
    assert got["window_updates"] == 2 and got["first"] == 0.75 and got["last"] == 7.75 and got["change"] == 7.0
    rng = np.random.default_rng(7)   # the documented method: each window's rollouts resampled on their own
    boot = rng.choice(last, (500, 4)).mean(axis=1) - rng.choice(first, (500, 4)).mean(axis=1)
    lo, hi = np.quantile(boot, [0.1, 0.9])
    assert (got["ci_low"], got["ci_high"]) == (round(float(lo), 6), round(float(hi), 6))
    assert got["ci_low"] < 7.0 < got["ci_high"] and got["excludes_zero"] is True
    flat = reward_change(_steps([[1.0, -1.0]] * 4), np.random.default_rng(1), b=300)
    assert flat["change"] == 0.0 and flat["excludes_zero"] is False
    # updates with failed rollouts hold fewer finite rewards: a window pools its rollouts (7 / 4 and 15 / 4),
    # it does not average its updates' means ((1 + 4) / 2 and (1 + 14 / 3) / 2)
    uneven = reward_change(_steps([[0.0, 0.0, 3.0], [4.0], [0.0], [0.0], [0.0], [0.0], [1.0], [6.0, 4.0, 4.0]]),
                           np.random.default_rng(0), b=50)
    assert (uneven["window_updates"], uneven["first"], uneven["last"], uneven["change"]) == (2, 1.75, 3.75, 2.0)
    assert uneven["rollouts"] == [4, 4]
    for n in (6, 7):   # a quarter of the updates rounded down: 1, not 2
        assert reward_change(_steps([[1.0]] * n), np.random.default_rng(0), b=20)["window_updates"] == 1


def test_the_grpo_reward_function_reads_the_last_message_and_is_named_rm():
    reward = RMReward(Scripted([[1.0, 2.0]]), {"q": "q"}, {"q": ""}, max_failures=0)
    seen = []
    reward.rm.score_answers = lambda items, f=reward.rm.score_answers: seen.append(items) or f(items)
    fn = reward.reward_func()
    assert fn.__name__ == "rm", "trl logs it as rewards/rm"
    out = fn(prompts=["p", "p"], completions=[[{"role": "assistant", "content": " chat answer "}], " plain answer"],
             question_id=["q", "q"], extra_column=[1, 2])
    assert out == [1.0, 2.0]
    assert [text for _, _, text in seen[0]] == ["chat answer", "plain answer"]


def test_reward_change_draws_its_documented_1000_resamples_and_says_excludes_zero_only_strictly():
    import numpy as np

    from tasks.downstream.rl.reward import reward_change

    steps = [[0.1 * i, 0.2 * i + 0.05, -0.3] for i in range(8)]
    got = reward_change(_steps(steps), np.random.default_rng(3))   # the defaults rl_train uses: b 1000, 95%
    first, last = np.array(steps[0] + steps[1]), np.array(steps[6] + steps[7])
    rng = np.random.default_rng(3)
    boot = rng.choice(last, (1000, 6)).mean(axis=1) - rng.choice(first, (1000, 6)).mean(axis=1)
    lo, hi = np.quantile(boot, [0.025, 0.975])
    assert (got["ci_low"], got["ci_high"], got["ci"]) == (round(float(lo), 6), round(float(hi), 6), 0.95)
    assert got["change"] == round(float(last.mean() - first.mean()), 6), "six decimals, as every metric"
    # an interval touching zero does not exclude it: [0, x] and [x, 0] say "no evidence of a change"
    up = reward_change(_steps([[0.0, 0.0], [0.0, 1.0]]), np.random.default_rng(0), b=400)
    down = reward_change(_steps([[0.0, 1.0], [0.0, 0.0]]), np.random.default_rng(0), b=400)
    assert up["ci_low"] <= 0 < up["ci_high"] and down["ci_low"] < 0 <= down["ci_high"]
    zero_edge = [r for r in (up, down) if 0 in (r["ci_low"], r["ci_high"])]
    assert zero_edge and all(r["excludes_zero"] is False for r in zero_edge)
    shift = reward_change(_steps([[0.0, 0.0], [1.0, 1.0]]), np.random.default_rng(0), b=50)
    assert (shift["ci_low"], shift["ci_high"], shift["excludes_zero"]) == (1.0, 1.0, True)


def test_each_step_records_its_rollouts_failures_finite_mean_std_and_why():
    reward = RMReward(Scripted([[1.0, 3.0, math.nan], None, [2.0, 2.0]]), {q: q for q in "qr"}, {q: "" for q in "qr"},
                      max_failures=10)
    reward(["q", "r", "q"], list("abc"))
    s = reward.steps[0]
    assert (s.rollouts, s.failures, s.mean, s.std) == (3, 1, 2.0, 1.0), "mean and std of the finite rewards only"
    assert s.errors == ["1 missing or non-finite score(s)"] and s.values == [1.0, 3.0]
    reward(["q"], ["d"])
    s = reward.steps[1]
    assert (s.rollouts, s.failures, s.mean, s.std, s.values) == (1, 1, None, None, [])
    assert s.errors == ["RuntimeError: RM server down"], "the exception's type and message, for the log"
    reward(["q", "r"], list("ef"))
    assert reward.steps[2].errors == [] and (reward.steps[2].mean, reward.steps[2].std) == (2.0, 0.0)
    wrong = RMReward(Scripted([[1.0, 2.0], [1.0]]), {"q": "q"}, {"q": ""}, max_failures=10)
    wrong(["q", "q"], ["a", "b"])
    assert wrong(["q", "q"], ["a", "b"]) == [1.0, 1.0]
    assert wrong.steps[1].errors == ["ValueError: 1 scores for 2 completions"] and wrong.steps[1].failures == 2


def test_a_stopped_run_names_the_rm_the_count_and_the_last_error():
    over = RMReward(Scripted([[1.0, None], [None]]), {"q": "q"}, {"q": ""}, max_failures=1)
    over(["q", "q"], ["a", "b"])
    with pytest.raises(RewardFailures) as err:
        over(["q"], ["c"])
    assert str(err.value).startswith("reward model 'scripted'")
    assert ("2 failed reward(s) in 2 step(s), more than rl.max_reward_failures=1; last: "
            "1 missing or non-finite score(s)") in str(err.value)
    with pytest.raises(RewardFailures) as err:
        RMReward(Scripted([None]), {"q": "q"}, {"q": ""}, max_failures=5)(["q"], ["a"])
    assert str(err.value).startswith("reward model 'scripted'")
    assert "no finite reward yet to count its failures as the worst in step 1; last: RuntimeError: RM server down" \
        in str(err.value)


def test_only_rms_that_score_one_answer_alone_can_drive_rl():
    from types import SimpleNamespace

    from tasks.downstream.rl.reward import rl_capable
    from tasks.models.rms.base import RewardModel
    from tasks.models.rms.registry import KINDS

    seen = set()
    for kind, cls in KINDS._all().items():
        alone = cls.score_answers is not RewardModel.score_answers
        assert rl_capable(SimpleNamespace(kind=kind)) is alone, kind
        seen.add(alone)
    assert seen == {True, False}, "the registry has both: a pairwise-only kind is refused"
    assert rl_capable(SimpleNamespace(kind="no-such-kind")) is False
