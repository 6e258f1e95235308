"""Downstream Best-of-N: does an RM's ranking help a policy? (the paper's BoN validation)

bon_sample   the policy writes N answers per test question (question + top-k posts only)
bon_judge    the rubric judge scores every distinct answer once (RM-independent)
bon_score    one RM scores every answer (one stage per RM, like score)
bon_report   best-of-k per RM for k = 1, 2, 4, … ≤ N, oracle and random lines, CIs, plot

Artifact paths and the params each stage reads are listed here; the paths mirror what
tasks/layout.py and dvc.yaml declare.
"""
from tasks.layout import BON_JUDGE as JUDGE  # noqa: F401 - the paths live in tasks/layout.py
from tasks.layout import BON_REPORT as REPORT  # noqa: F401
from tasks.layout import BON_SAMPLE as SAMPLE  # noqa: F401
from tasks.layout import BON_SCORES_DIR as SCORES_DIR  # noqa: F401
from tasks.layout import bon_scores as scores  # noqa: F401


# The `bon` keys each stage reads: its cache key, and its dvc.yaml `params`, hold these only,
# so changing the bootstrap never resamples and adding an RM never re-judges.
SAMPLE_PARAMS = ("policy_llm", "prompt", "n", "temperature", "top_p", "max_tokens", "max_words",
                 "profile_k", "max_words_per_post", "splits", "domains", "questions_limit")
JUDGE_PARAMS = ("judge",)
SCORE_PARAMS = ("strategy",)
REPORT_PARAMS = ("max_k", "bootstrap", "ci")

def bon_params(params: dict, keys: tuple[str, ...]) -> dict:
    from tasks.params import stage_params

    from tasks.errors import ConfigError

    p = stage_params(params, "bon")
    missing = [k for k in keys if k not in p]
    if missing:
        raise ConfigError(f"params: bon.{missing[0]} is missing")
    return {k: p[k] for k in keys}
