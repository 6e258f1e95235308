"""Human evaluation of the pairs (issue 5): a blinded export for annotators, the import of their
files, and the statistics behind the paper's claim that a pair differs only in personal fit.

The rating form is defined here once; the export, the readers, the LLM proxy and the analysis
all use it."""
from __future__ import annotations

# name -> (label shown to annotators, what a 5 means). Order = order on the form.
DIMENSIONS = {
    "factuality": ("Factuality & correctness",
                   "everything the answer states is true and the advice is sound"),
    "relevance": ("Relevance & instruction following",
                  "the answer addresses exactly the question that was asked"),
    "helpfulness": ("Helpfulness & harmlessness",
                    "the answer is useful, actionable and safe to follow"),
    "personal_fit": ("Personal rubric alignment",
                     "the answer fits what THIS user cares about (the aspects listed)"),
}
GENERAL = ("factuality", "relevance", "helpfulness")
PERSONAL = "personal_fit"
ANSWERS = ("A", "B")
SIDES = ("chosen", "rejected")
SCALE = (1, 5)
HUMAN, PROXY = "human", "llm-proxy"   # annotator_kind values; never pooled together

# Published human-evaluation figures (Personalized RewardBench, arXiv 2604.07343).
PAPER = {
    "general_dimensions": {"chosen": [4.3, 4.99], "rejected": [4.3, 4.99]},
    "personal_fit": {"chosen": [4.8, 4.9], "rejected": [1.4, 1.5]},
    "personal_gap": [3.3, 3.5],
}


def rating_field(answer: str, dimension: str) -> str:
    """Column / Label Studio control name of one rating, e.g. ('A', 'factuality') -> 'a_factuality'."""
    return f"{answer.lower()}_{dimension}"


RATING_FIELDS = {rating_field(a, d): (a, d) for a in ANSWERS for d in DIMENSIONS}


def parse_score(value) -> int:
    """A rating as given (a number or its text) -> an int on the scale, else ValueError saying why."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"{value!r} is not a score")
    try:
        x = float(value.strip()) if isinstance(value, str) else float(value)
    except ValueError:
        raise ValueError(f"{value!r} is not a number") from None
    if not x.is_integer():
        raise ValueError(f"{value!r} is not a whole number {SCALE[0]}-{SCALE[1]}")
    if not SCALE[0] <= x <= SCALE[1]:
        raise ValueError(f"{value!r} is outside {SCALE[0]}-{SCALE[1]}")
    return int(x)


def dimensions_text() -> str:
    """The scale explained, as annotators and the proxy read it."""
    lines = [f"- {name} ({label}): 5 = {five}; 1 = not at all" for name, (label, five) in DIMENSIONS.items()]
    return "\n".join(lines)


