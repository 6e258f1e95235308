"""The explorer's data and the page section's rows, as pure functions: per pair one letter per RM and strategy
(contestants first), margins at 4 significant digits, a long context cut at a space with the rest counted, the
embedded JSON with no '<' in it whatever the texts hold; the section's rows for the contestants and the length
rules, the rest folded into their ranges."""
import json

from tasks.ops.report import explain, explorer
from tasks.stages.explain.cells import OUTCOMES

EST = lambda v, n=6, ci=None: {"value": v, "n": n, "ci": ci, "status": "ok" if ci else f"too few pairs (n = {n} < 10)"}  # noqa: E731


def _cell(q, rm, role, s, right, margin, **kw):
    return {"question_id": q, "rm": rm, "role": role, "strategy": s, "evaluation_only": s == "oracle", "right": right,
            "margin": margin, "tie": kw.get("tie", False), "invalid": kw.get("invalid", False)}


def _pair(q, ctx="", chosen="a b c", rejected="a x c"):
    return {"question_id": q, "domain": "Art", "category": "music", "question": f"question {q} </script><!--",
            "chosen": chosen, "rejected": rejected, "chosen_words": 3, "rejected_words": 3,
            "length_relation": "equal length", "profile_posts": 4, "profile_bin": "4 posts", "aspects": ["a\u2028b"],
            "contexts": [{"strategy": "none", "text": "", "failed": False},
                         {"strategy": "raw_profile", "text": ctx, "failed": False}],
            "judge_chosen": None, "judge_rejected": None, "valid": None, "human": []}


METRICS = {"min_n": 10, "pairs": {"profile_bins": ["4 posts"]},
           "rms": {rm: {"role": role, "strategies": {s: {"accuracy": EST(0.5), "picked_longer": EST(0.5)}
                                                      for s in ("none", "raw_profile")}}
                   for rm, role in (("zed", "contestant"), ("coin", "null baseline"), ("alpha", "contestant"))}}


def test_each_pair_holds_a_letter_and_a_margin_per_rm_and_strategy_contestants_first():
    cells = [_cell("q1", "coin", "null baseline", "none", True, 0.123456789),
             _cell("q1", "zed", "contestant", "none", False, -2.5, tie=False),
             _cell("q1", "alpha", "contestant", "raw_profile", False, 0.0, tie=True),
             _cell("q1", "zed", "contestant", "raw_profile", False, None, invalid=True)]
    d = explorer.data(cells, [_pair("q1"), _pair("q2")], METRICS)
    assert [r["name"] for r in d["rms"]] == ["alpha", "zed", "coin"]
    assert [s["name"] for s in d["strategies"]] == ["none", "raw_profile"] and d["outcomes"] == list(OUTCOMES)
    (p,) = d["pairs"]   # q2 was never scored: not listed
    assert p["o"] == ["-wr", "ti-"] and p["m"] == [[None, -2.5, 0.1235], [0.0, None, None]]
    assert p["chosen"] == ["a ", "b ", "c"] and p["rejected"] == ["a ", "x ", "c"]
    assert d["analysis"]["zed"]["none"]["accuracy"] == [0.5, None, None, 6], "an estimate as [value, lo, hi, n]"


def test_a_long_context_shows_its_start_cut_at_a_space_and_counts_the_rest():
    text = " ".join(f"word{i:04d}" for i in range(400))   # 3,599 characters
    shown, more = explorer.shown_context(text)
    assert len(shown) <= explorer.CONTEXT_CHARS and text.startswith(shown) and text[len(shown)] == " "
    assert more == len(text) - len(shown)
    assert explorer.shown_context("short context") == "short context"
    solid = "x" * (explorer.CONTEXT_CHARS + 5)
    assert explorer.shown_context(solid) == [solid[:explorer.CONTEXT_CHARS], 5], "no space: cut at the limit"


def test_the_embedded_json_holds_no_angle_bracket_and_reads_back_unchanged():
    d = explorer.data([_cell("q1", "zed", "contestant", "none", True, 1.0)],
                      [_pair("q1", ctx="</script><script>alert(1)</script>")], METRICS)
    text = explorer.embedded(d)
    assert "<" not in text and "\u2028" not in text
    assert json.loads(text) == d


def test_the_section_rows_are_the_contestants_and_the_length_rules_the_rest_folded():
    metrics = {"min_n": 10, "ci": 0.95, "tie_policy": "strict", "strategies": ["none"],
               "pairs": {"n": 6, "length": {"chosen longer": 2, "chosen shorter": 4}},
               "outcomes": {"none": {"contestants": 1, "pairs": 6, "every_contestant_wrong": 1, "contestants_disagree": 0}},
               "rms": {rm: {"role": role, "strategies": {"none": {
                   "accuracy": EST(acc), "picked_longer": EST(longer), "length_gap": {**EST(gap), "n": [2, 4]},
                   "accuracy_by_length": {"chosen longer": EST(acc, 2), "chosen shorter": EST(acc, 4)}}}}
                   for rm, role, acc, longer, gap in [
                       ("bt", "contestant", 0.5, 0.5, 0.0), ("ll", "null baseline", 1 / 3, 1.0, 1.0),
                       ("ls", "null baseline", 2 / 3, 0.0, -1.0), ("coin-1", "null baseline", 0.5, 0.25, 0.0),
                       ("coin-2", "null baseline", 0.75, 0.8, 0.0), ("ladder", "positive control", 1.0, 0.3, 0.0)]}}
    rms = {"ll": {"kind": "length-longer"}, "ls": {"kind": "length-shorter"}, "coin-1": {"kind": "random"},
           "coin-2": {"kind": "random"}, "bt": {"kind": "bradley-terry"}, "ladder": {"kind": "mixture"}}
    sec = explain.section(metrics, rms, "none")
    (block,) = sec["blocks"]
    assert [r["rm"] for r in block["rows"]] == ["bt", "ll", "ls"], "contestants, then the two length rules"
    assert [(f["what"], f["count"], f["picked_longer"], f["accuracy"]) for f in block["folded"]] == [
        ("positive control", 1, "30.0%", "100.0%"), ("other null baseline", 2, "25.0–80.0%", "50.0–75.0%")]
    ll = block["rows"][1]
    assert (ll["picked_longer"]["text"], ll["picked_longer"]["ci"], ll["gap"]["text"]) == ("100.0%", "n = 6: too few",
                                                                                           "+100.0 pp")
    assert sec["perfect"] == "33.3%", "a perfect RM picks the longer answer where the chosen is the longer: 2 of 6"
    assert [round(line["cx"]) for line in block["chart"]["lines"]] == [345, 540, 150], "50%, 100%, 0% on the axis"
