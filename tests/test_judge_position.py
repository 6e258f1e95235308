"""Position of the answers for a pairwise judge shown one order (issue 11 item 7): chosen goes to
A or B by a seeded coin keyed by the pair (p = 0.5), so a judge that always says "A" is at chance,
not at ~100%; the share of verdicts for position A is reported in both modes."""

from tasks.stages.leaderboard import leaderboard_metrics, leaderboard_rows
from tasks.models.rms.base import PairInput
from tasks.models.rms.registry import make_rm
from tasks.stages.score import score_rows

LB = {"tie_policy": "strict", "bootstrap": 50, "ci": 0.95, "split": "test"}
PAIRS = [{"question_id": f"q{i}", "domain": "Art", "split": "test", "chosen": f"GOOD answer {i}",
          "rejected": f"bad answer {i}"} for i in range(200)]
QUESTIONS = {p["question_id"]: {"question": f"Question {p['question_id']}?"} for p in PAIRS}
CONTEXT = {q: "" for q in QUESTIONS}


class Res:
    def __init__(self, llm, seed=5):
        self._llm, self.seed = llm, seed

    def llm(self, name):
        return self._llm


class Judge:
    """choice_logprobs of "A"/"B": always A (pure position bias), or the answer holding GOOD."""

    class backend:
        @staticmethod
        def identity():
            return "scripted"

    def __init__(self, always_a: bool):
        self.always_a = always_a

    def choice_logprobs(self, messages, choices):
        a = messages[0]["content"].split("Answer A:")[1].split("Answer B:")[0]
        first = self.always_a or "GOOD" in a
        return {"A": -0.1 if first else -2.0, "B": -2.0 if first else -0.1}


def _rm(always_a, both_orders, seed=5):
    return make_rm("j", {"kind": "judge-pairwise", "llm": "x", "both_orders": both_orders}, Res(Judge(always_a), seed))


def _micro(rows):
    (micro,) = [r for r in leaderboard_rows(rows, LB, 1) if r["domain"] == "micro"]
    return micro


def test_always_a_judge_is_at_chance_with_one_order():
    rows = score_rows(_rm(True, False), "personalised", "none", PAIRS, QUESTIONS, CONTEXT)
    micro = _micro(rows)
    assert 0.4 < micro["accuracy"] < 0.6, "chosen is in position A for about half the pairs"
    assert {r["chosen_position"] for r in rows} == {"A", "B"}
    assert micro["position_a_rate"] == 1.0, "the bias is reported"
    assert leaderboard_metrics(leaderboard_rows(rows, LB, 1), rows, LB)["rms"]["j"]["none"]["position_a_rate"] == 1.0


def test_a_fair_judge_shown_one_order_is_right_and_unbiased():
    rows = score_rows(_rm(False, False), "personalised", "none", PAIRS, QUESTIONS, CONTEXT)
    micro = _micro(rows)
    assert micro["accuracy"] == 1.0 and 0.4 < micro["position_a_rate"] < 0.6


def test_the_placement_is_keyed_by_the_pair_and_the_seed():
    rm = _rm(False, False)
    pairs = [PairInput(p["question_id"], QUESTIONS[p["question_id"]]["question"], "", p["chosen"], p["rejected"])
             for p in PAIRS]
    placed = [rm.chosen_shown_second(p) for p in pairs]
    assert [rm.chosen_shown_second(p) for p in pairs[::-1]] == placed[::-1]
    by_pair = {s.chosen_position for s in rm.score_pairs(pairs[5:6])} | {rm.score_pairs(pairs)[5].chosen_position}
    assert len(by_pair) == 1, "the same pair gets the same position alone or in a batch"
    assert [_rm(False, False, seed=6).chosen_shown_second(p) for p in pairs] != placed


def test_both_orders_report_the_position_bias_too():
    rows = score_rows(_rm(True, True), "personalised", "none", PAIRS[:10], QUESTIONS, CONTEXT)
    assert {r["chosen_position"] for r in rows} == {"both"} and all(r["picked_a"] == 1.0 for r in rows)
    micro = _micro(rows)
    assert micro["position_a_rate"] == 1.0 and micro["ties"] == 10, "pure position bias cancels to ties"
    assert _micro(score_rows(_rm(False, True), "personalised", "none", PAIRS[:10], QUESTIONS, CONTEXT))[
        "position_a_rate"] == 0.5


def test_two_pairs_of_one_question_are_placed_each_by_its_own_coin():
    """Keyed by the pair, not the question: a question's second pair (another rejected answer) is placed
    independently of its first, so about half of the questions show their two pairs on different sides."""
    rm = _rm(False, False)
    firsts = [PairInput(p["question_id"], QUESTIONS[p["question_id"]]["question"], "", p["chosen"], p["rejected"])
              for p in PAIRS]
    seconds = [PairInput(p.question_id, p.question, "", p.chosen, p.rejected + " (another)") for p in firsts]
    differ = sum(rm.chosen_shown_second(a) != rm.chosen_shown_second(b) for a, b in zip(firsts, seconds))
    assert 0.35 * len(PAIRS) < differ < 0.65 * len(PAIRS), differ
