"""`ppe-human`: PPE's human-preference set (lmarena-ai/PPE-Human-Preference-V1, split test; arXiv 2410.14872
and its card): Chatbot Arena
pairs {question_id, prompt, response_1, response_2, winner}; the winner's response is correct, the
other incorrect; ties are left out (as PPE does) and counted. `language` (when present) is the subset."""
from __future__ import annotations

from tasks.stages.benchmarks import register
from tasks.stages.benchmarks.base import Benchmark, Row, published_accuracy
from tasks.models.listwise import Item

WINNERS = {"model_a": 0, "model_b": 1, "response_1": 0, "response_2": 1}
TIES = ("tie", "tie (bothbad)")


@register
class PpeHuman(Benchmark):
    name = kind = "ppe-human"
    hub_id = "lmarena-ai/PPE-Human-Preference-V1"
    rule = "pairwise accuracy with ties dropped (PPE's human-preference accuracy), a tied score wrong"

    def items(self, rows):
        self.ties_dropped = 0
        return super().items(rows)

    def item(self, row: Row):
        row = Row(row.raw, "question_id")
        row.required_id()
        answers = (row.text("response_1"), row.text("response_2"))
        winner = row.get("winner")
        if winner in TIES:
            self.ties_dropped += 1
            return None
        if winner not in WINNERS:
            row.fail("winner", f"expected one of {', '.join([*WINNERS, *TIES])}, got {winner!r}")
        w = WINNERS[winner]
        return Item(row.id, row.text("prompt"), (answers[w],), (answers[1 - w],),
                    subset=row.text("language", required=False) or "all")

    def metrics(self, rows, policy):
        return {**published_accuracy(self.rule, rows), "ties_dropped": getattr(self, "ties_dropped", 0)}
