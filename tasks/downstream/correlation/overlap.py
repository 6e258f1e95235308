"""Split-half questions, as used: how many test questions the benchmark side scored and the downstream side
answered, and how many both (0 under ingest.downstream_share > 0). Counted from the tables the correlation
read (the scores vs the BoN / RL per-question tables), not from params, so a stage that reads the wrong
half shows here."""
from __future__ import annotations


def question_counts(benches: dict, downs: dict) -> dict:
    """benches, downs: correlation Sides (tasks/downstream/correlation/sides.py); the benchmarks from
    `scores` are ours (the other benchmarks' items are not our questions)."""
    def used(sides) -> set[str]:
        return {q for side in sides for per_rm in side.per_question.values() for q in per_rm}

    bench = used(b for b in benches.values() if b.source == "scores")
    down = used(downs.values())
    return {"benchmark_n": len(bench), "downstream_n": len(down), "overlap": len(bench & down)}
