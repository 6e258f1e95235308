"""Profile strategies: what an RM sees of the user besides the question (the paper's comparison).
Each is a context builder registered by name; a new one is a function here and a registry line.

- none:        the question only
- raw_profile: the top-k retrieved past posts (the profiles stage's formatted text)
- planner:     the aspects the rubrics stage inferred (from question + posts only)
- oracle:      the gold rubric aspects — an evaluation-only upper bound, labelled as such
The narrative never reaches an RM.
"""
from __future__ import annotations

from tasks.core.errors import ConfigError
from tasks.core.registry import Registry
from tasks.models.rms.base import PairInput

STRATEGIES = Registry("strategy")
EVALUATION_ONLY = {"oracle"}


class Contexts(dict):
    """question id -> context text, plus `failed`: the questions whose context could not be built
    (a planner row that never parsed). Those map to "" (the RM sees the question only), so the
    score rows mark them and the leaderboard counts them beside the accuracy."""

    def __init__(self, items, failed=()):
        super().__init__(items)
        self.failed = frozenset(failed)


@STRATEGIES.register("none")
def _none(questions, profile_text, inferred, fidelity: str = "corrected") -> Contexts:
    return Contexts({q: "" for q in questions})


# what heads the posts: a label (prbench) | nothing, the posts glued on (BoN/score.py:80, PPO/reward_server.py:174)
PROFILE_HEADER = {"corrected": "My past posts:\n", "release": ""}


@STRATEGIES.register("raw_profile")
def _raw_profile(questions, profile_text, inferred, fidelity: str = "corrected") -> Contexts:
    from tasks.core.fidelity import pick

    header = pick(PROFILE_HEADER, fidelity)
    return Contexts({q: f"{header}{profile_text.get(q, '')}" for q in questions})


@STRATEGIES.register("planner")
def _planner(questions, profile_text, inferred, fidelity: str = "corrected") -> Contexts:
    return Contexts({q: ("What I expect in an answer: " + "; ".join(inferred[q])) if inferred.get(q) else ""
                     for q in questions}, failed=[q for q in questions if not inferred.get(q)])


@STRATEGIES.register("oracle")
def _oracle(questions, profile_text, inferred, fidelity: str = "corrected") -> Contexts:
    return Contexts({q: "What I expect in an answer: " + "; ".join(a["aspect"] for a in questions[q]["rubric_aspects"])
                     for q in questions})


def check(strategies, key: str = "scoring.strategies") -> list[str]:
    problems = STRATEGIES.check_names(list(strategies), key)
    if problems:
        raise ConfigError("\n".join(problems))
    return list(strategies)


def check_benchmark_strategy(strategy: str, key: str) -> str:
    """A strategy for anything but the leaderboard's own rows (BoN, RL, a trained RM, the correlation):
    the gold rubric there would leak evaluation-only labels into a result, so it is refused."""
    check([strategy], key)
    if strategy in EVALUATION_ONLY:
        raise ConfigError(f"{key}: '{strategy}' is evaluation-only (the gold rubric: an upper bound in "
                          f"scoring.strategies, never an input here); use one of "
                          f"{', '.join(s for s in STRATEGIES if s not in EVALUATION_ONLY)}")
    return strategy


def check_planner_splits(strategy: str, splits, params: dict, key: str) -> None:
    """The planner strategy reads the rubrics stage's output, built only for rubrics.splits: every split a
    stage reads with it must be there, or each of its questions would get an empty context."""
    if strategy != "planner":
        return
    built = set((params.get("rubrics") or {}).get("splits") or ())
    missing = [s for s in splits if s not in built]
    if missing:
        raise ConfigError(f"{key}: 'planner' needs planner rubrics for split '{missing[0]}', but rubrics.splits is "
                          f"{sorted(built)}: add it there, or use raw_profile")


def contexts(strategy: str, questions: dict[str, dict], profile_text: dict[str, str],
             inferred: dict[str, list[str] | None], fidelity: str = "corrected") -> Contexts:
    """question id -> context text for one strategy (see Contexts for the planner's failed rows)."""
    return STRATEGIES.lookup(strategy, "strategy")(questions, profile_text, inferred, fidelity)


def pair_inputs(pairs: list[dict], questions: dict[str, dict], context: dict[str, str]) -> list[PairInput]:
    return [PairInput(p["question_id"], questions[p["question_id"]]["question"], context[p["question_id"]],
                      p["chosen"], p["rejected"]) for p in pairs]


def load_contexts(strategy: str, questions_path: str, context_path: str, inferred_path: str | None,
                  fidelity: str = "corrected") -> Contexts:
    """contexts() from the stage artifacts (questions, profile context, inferred rubrics)."""
    from pathlib import Path

    from tasks.core.artifacts import read_table

    questions = {q["id"]: q for q in read_table(questions_path, "questions").to_pylist()}
    profile_text = {r["question_id"]: r["profile_text"]
                    for r in read_table(context_path, "profile_context").to_pylist()}
    inferred = {}
    if strategy == "planner":
        if not inferred_path or not Path(inferred_path).exists():
            raise ConfigError("strategy 'planner' needs the rubrics stage's output (data/rubrics/inferred.parquet)")
        inferred = {r["question_id"]: r["aspects"] for r in read_table(inferred_path, "inferred_rubrics").to_pylist()}
    return contexts(strategy, questions, profile_text, inferred, fidelity)
