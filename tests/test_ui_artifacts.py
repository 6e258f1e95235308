"""Results in the Prefect UI: the leaderboard, BoN, correlation and explain tables are table artifacts under
fixed keys, so a second run adds a version under the same key (the Artifacts page's history)
instead of a new, unrelated artifact; each table holds the rows a user reads, CIs included."""
import json

import pytest
from prefect import flow
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

from flows import ui


def _board(acc_a: float) -> list[dict]:
    def row(rm, strategy, domain, acc, lo, hi):
        return {"rm": rm, "strategy": strategy, "domain": domain, "accuracy": acc, "ci_low": lo, "ci_high": hi,
                "n": 40, "ties": 0, "invalid": 0, "evaluation_only": False}
    return [row("a", "none", "micro", acc_a, 0.4, 0.8), row("b", "none", "micro", 0.7, 0.55, 0.85),
            row("a", "none", "Art", 0.9, 0.1, 1.0),                    # a domain row: not on the micro board
            row("a", "oracle", "micro", 0.5, 0.3, 0.7), row("b", "oracle", "micro", None, None, None)]


CURVE = [{"rm": rm, "method": "best_of_k", "k": k, "domain": dom, "judge_score": s, "ci_low": s - 0.1,
          "ci_high": s + 0.1, "n_questions": 3}
         for rm, k, dom, s in [("a", 1, "all", 0.5), ("a", 4, "all", 0.6), ("b", 4, "all", 0.8),
                               ("b", 1, "all", 0.9), ("a", 4, "Art", 0.2)]]
CORR = [{"benchmark": "leaderboard", "predictor": "accuracy", "downstream": "bon", "metric": "spearman",
         "value": 0.8123456, "ci_low": 0.1, "ci_high": 1.0, "null_random": 0.0, "null_reversed": -1.0, "p_value": 0.2,
         "p_holm": 0.4, "n_rms": 5, "status": "ok"}]


def _estimate(value, ci=None, n=12):
    return {"value": value, "n": n, "ci": ci, "status": "ok" if ci else "too few pairs (n = 6 < 10)"}


EXPLAIN = {"pairs": {"n": 12, "length": {"chosen longer": 6, "chosen shorter": 6}}, "strategies": ["none", "raw_profile"],
           "rms": {"a": {"role": "contestant", "strategies": {s: {
               "pairs": 12, "accuracy": _estimate(0.75, [0.5, 1.0]), "picked_longer": _estimate(0.6123456, [0.3, 0.9]),
               "length_gap": _estimate(0.5, None, [6, 6]),
               **({"profile_gain": {"vs": "none", "n": 12, "right_only_with": 3, "right_only_without": 1,
                                    "net": _estimate(1 / 6, [0.0, 0.4])}} if s != "none" else {})}
               for s in ("none", "raw_profile")}}}}


@flow
def publish(acc_a: float):
    from tasks.stages.explain.text import summary_rows

    ui.leaderboard(_board(acc_a))
    ui.bon(CURVE)
    ui.correlation(CORR)
    ui.explain(summary_rows(EXPLAIN))


def _versions(key: str) -> list[list[dict]]:
    with get_client(sync_client=True) as client:
        arts = client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key])))
    assert all(a.type == "table" for a in arts), [a.type for a in arts]
    return [json.loads(a.data) if isinstance(a.data, str) else a.data
            for a in sorted(arts, key=lambda a: a.created)]


@pytest.mark.timeout(300)   # slow: on the Prefect harness (conftest marks it)
def test_tables_keep_fixed_keys_and_their_history(prefect_harness):
    # the harness's server is shared by the session: earlier tests' versions are there too
    before = {k: len(_versions(k)) for k in (ui.LEADERBOARD_KEY, ui.CORRELATION_KEY)}
    publish(0.6)
    publish(0.75)
    boards = _versions(ui.LEADERBOARD_KEY)[before[ui.LEADERBOARD_KEY]:]
    assert len(boards) == 2, "a second run is a new version under the same key"
    first, latest = boards
    # micro rows only, best first within each strategy, an unscored RM last; 4-digit cells
    assert [(r["strategy"], r["rm"], r["accuracy"]) for r in first] == [
        ("none", "b", 0.7), ("none", "a", 0.6), ("oracle", "a", 0.5), ("oracle", "b", None)]
    assert [(r["rm"], r["accuracy"]) for r in latest[:2]] == [("a", 0.75), ("b", 0.7)]
    assert latest[0]["ci_low"] == 0.4 and latest[0]["ci_high"] == 0.8 and latest[0]["n"] == 40

    bon = _versions(ui.BON_KEY)[-1]
    assert [(r["rm"], r["k"], r["judge_score"]) for r in bon] == [("b", 4, 0.8), ("a", 4, 0.6)], \
        "only the largest k, over all domains, best first"
    assert bon[0]["ci_low"] == 0.7 and bon[0]["ci_high"] == 0.9

    corr = _versions(ui.CORRELATION_KEY)[before[ui.CORRELATION_KEY]:]
    assert len(corr) == 2 and corr[-1] == [{**CORR[0], "value": 0.8123}]

    why = _versions(ui.EXPLAIN_KEY)[-1]
    assert [(r["rm"], r["strategy"], r["picked_longer"], r["picked_longer_ci"]) for r in why] == [
        ("a", "none", 0.6123, "[0.3000, 0.9000]"), ("a", "raw_profile", 0.6123, "[0.3000, 0.9000]")]
    assert why[0]["length_gap_ci"] == "too few pairs (n = 6 < 10)" and why[0]["gain_vs_none"] is None
    assert (why[1]["gain_vs_none"], why[1]["right_only_with_profile"], why[1]["right_only_without"]) == (0.1667, 3, 1)
