"""The explain stage's upstream artifacts for synthetic scores (tests/scale_report.py): questions with a
category and gold aspects, the selected pairs (chosen the longer answer in every other pair), profiles of
growing size, the profile context and planner rubrics (one planner reply that never parsed), one pair rated by
humans. Written through the real schemas, in the layout's paths under `root`."""
from __future__ import annotations

from pathlib import Path

from tasks.core import layout
from tasks.core.artifacts import write_table

CATEGORIES = ("music", "cooking", "history")
WORDS = "the answer covers budget level tradition constraints tone detail format and the user's own past posts".split()


def _text(i: int, n: int, own: str) -> str:
    return " ".join(WORDS[(i + j) % len(WORDS)] for j in range(n)) + f" {own}."


def write(root: Path, ids: list[tuple[str, str]]) -> dict:
    """(question id, domain) pairs -> the explain stage's declared inputs ({name: path})."""
    questions, pairs, profiles, contexts, inferred = [], [], [], [], []
    for i, (qid, domain) in enumerate(ids):
        aspects = [{"aspect": f"aspect {k} of {qid}", "evidence": "e", "reason": "r"} for k in range(3)]
        questions.append({"id": qid, "domain": domain, "split": "test", "category": CATEGORIES[i % 3],
                          "question": f"What should user {qid} know about topic {i}?", "narrative": "n",
                          "rubric_aspects": aspects})
        long, short = _text(i, 40 + i % 7, "nylon strings under budget"), _text(i, 30 + i % 5, "steel strings")
        chosen, rejected = (long, short) if i % 2 == 0 else (short, long)
        pairs.append({"question_id": qid, "domain": domain, "split": "test", "chosen": chosen, "rejected": rejected,
                      "generator": "reference:test", "chosen_words": len(chosen.split()),
                      "rejected_words": len(rejected.split()), "length_ratio": len(chosen.split()) / len(rejected.split()),
                      "source": "reference", "judge_chosen": 0.8, "judge_rejected": 0.3 if i % 4 else 0.9,
                      "valid": bool(i % 4)})
        for k in range(5 + i):
            profiles.append({"question_id": qid, "item_id": f"{qid}_{k}", "position": k, "category": "x",
                             "text": f"post {k} of {qid}"})
        contexts.append({"question_id": qid, "retriever": "bm25", "k": 2, "item_ids": [f"{qid}_0"],
                         "profile_text": f"[1] post 0 of {qid}"})
        inferred.append({"question_id": qid, "domain": domain, "split": "test",
                         "aspects": None if i == 1 else [f"inferred {k} of {qid}" for k in range(2)], "valid": i != 1,
                         "attempts": 1, "error": "", "raw_text": "", "generator": "test"})
    ratings = [{"annotator": "h1", "annotator_kind": "human", "item_id": "i0", "question_id": ids[0][0],
                "domain": ids[0][1], "split": "test", "answer": a, "side": side, "dimension": "personal rubric alignment",
                "score": score, "source": "test.csv", "source_row": n}
               for n, (a, side, score) in enumerate([("A", "chosen", 5), ("B", "rejected", 2)])]
    paths = {"questions": (layout.INGEST["questions"], questions, "questions"),
             "selected_pairs": (layout.PAIRS["selected_pairs"], pairs, "judged_pairs"),
             "profiles": (layout.INGEST["profiles"], profiles, "profiles"),
             "profile_context": (layout.PROFILES["profile_context"], contexts, "profile_context"),
             "inferred_rubrics": (layout.RUBRICS["inferred_rubrics"], inferred, "inferred_rubrics"),
             "ratings": (layout.HUMAN_EVAL["ratings"], ratings, "human_ratings")}
    return {name: str(write_table(rows, root / path, schema)) for name, (path, rows, schema) in paths.items()}
