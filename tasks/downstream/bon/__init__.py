"""Downstream Best-of-N: does an RM's ranking help a policy? (the paper's BoN validation)

bon_sample   the policy writes N answers per test question (question + top-k posts only)
bon_judge    the rubric judge scores every distinct answer once (RM-independent)
bon_score    one RM scores every answer (one stage per RM, like score)
bon_report   best-of-k per RM for k = 1, 2, 4, … ≤ N, oracle and random lines, CIs, plot

Artifact paths and the params each stage reads are listed here; the paths mirror what
tasks/core/layout.py and dvc.yaml declare.
"""
from tasks.core.layout import BON_JUDGE as JUDGE  # noqa: F401 - the paths live in tasks/core/layout.py
from tasks.core.layout import BON_REPORT as REPORT  # noqa: F401
from tasks.core.layout import BON_SAMPLE as SAMPLE  # noqa: F401
from tasks.core.layout import BON_SCORES_DIR as SCORES_DIR  # noqa: F401
from tasks.core.layout import bon_scores as scores  # noqa: F401
from tasks.core.stage_table import BON_JUDGE_PARAMS as JUDGE_PARAMS  # noqa: F401 - the table declares them
from tasks.core.stage_table import BON_REPORT_PARAMS as REPORT_PARAMS  # noqa: F401
from tasks.core.stage_table import BON_SAMPLE_PARAMS as SAMPLE_PARAMS  # noqa: F401
from tasks.core.stage_table import BON_SCORE_PARAMS as SCORE_PARAMS  # noqa: F401


def bon_params(params: dict, keys: tuple[str, ...]) -> dict:
    from tasks.core.params import group_keys

    return group_keys(params, "bon", keys)
