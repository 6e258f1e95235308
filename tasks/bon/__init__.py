"""Downstream Best-of-N: does an RM's ranking help a policy? (the paper's BoN validation)

bon_sample   the policy writes N answers per test question (question + top-k posts only)
bon_judge    the rubric judge scores every distinct answer once (RM-independent)
bon_score    one RM scores every answer (one stage per RM, like score)
bon_report   best-of-k per RM for k = 1, 2, 4, … ≤ N, oracle and random lines, CIs, plot

Artifact paths and the params each stage reads are listed here; the paths mirror what
tasks/layout.py and dvc.yaml declare.
"""
from tasks.bon import schemas  # noqa: F401  (registers the bon_* schemas)

SAMPLE = {"samples": "data/bon/samples.parquet", "metrics": "metrics/bon_sample.json"}
JUDGE = {"judged": "data/bon/judged.parquet", "metrics": "metrics/bon_judge.json"}
SCORES_DIR = "data/bon/scores"
REPORT = {"per_question": "data/bon/per_question.parquet", "curve": "data/bon/curve.parquet",
          "metrics": "metrics/bon.json", "plot": "plots/bon_curve.png"}


def scores(rm: str) -> dict:
    return {"scores": f"{SCORES_DIR}/{rm}.parquet", "metrics": f"metrics/bon_scores/{rm}.json"}


# The `bon` keys each stage reads: its cache key, and its dvc.yaml `params`, hold these only,
# so changing the bootstrap never resamples and adding an RM never re-judges.
SAMPLE_PARAMS = ("policy_llm", "prompt", "n", "temperature", "top_p", "max_tokens", "max_words",
                 "profile_k", "max_words_per_post", "splits", "domains", "questions_limit")
JUDGE_PARAMS = ("judge",)
SCORE_PARAMS = ("strategy",)
REPORT_PARAMS = ("max_k", "bootstrap", "ci")

BASE = ["tasks/bon/__init__.py", "tasks/bon/schemas.py"]
CODE = {   # for tasks/layout.py CODE (each stage's own module only: editing the report resamples nothing)
    "bon_sample": ["flows/bon_sample.py", *BASE, "tasks/bon/sample.py", "tasks/prompts.py", "tasks/profiles.py",
                   "tasks/rubrics.py", "tasks/structured.py", "tasks/resources.py", "tasks/encoders.py", "tasks/llm"],
    "bon_judge": ["flows/bon_judge.py", *BASE, "tasks/bon/judge_stage.py", "tasks/judge.py", "tasks/structured.py",
                  "tasks/prompts.py", "tasks/resources.py", "tasks/encoders.py", "tasks/llm"],
    "bon_score": ["flows/bon_score.py", *BASE, "tasks/bon/select.py", "tasks/strategies.py", "tasks/rms",
                  "tasks/prompts.py", "tasks/resources.py", "tasks/encoders.py", "tasks/llm"],
    "bon_report": ["flows/bon_report.py", *BASE, "tasks/bon/report.py", "tasks/bon/select.py", "tasks/plots.py"],
}


def bon_params(params: dict, keys: tuple[str, ...]) -> dict:
    from tasks.params import stage_params

    from tasks.errors import ConfigError

    p = stage_params(params, "bon")
    missing = [k for k in keys if k not in p]
    if missing:
        raise ConfigError(f"params: bon.{missing[0]} is missing")
    return {k: p[k] for k in keys}
