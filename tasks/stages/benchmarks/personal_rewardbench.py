"""`personal-rewardbench` (SynthesizeMe, arXiv 2506.05598; MichaelR207/chatbot_arena_personalized_0125, its
card and loader): one HF split, `train`, holding every row, with a `split` column (train / val / test);
rows {user_id, prompt (a string or the conversation as messages), chosen, rejected (strings or messages),
split}. The benchmark is the rows with split == test; every train and val row of the same user, as
"prompt -> preferred over rejected" lines, is that user's profile (their history). A local copy is the
same rows (Parquet / JSONL / JSON) with their `split` column."""
from __future__ import annotations

from tasks.stages.benchmarks import register
from tasks.stages.benchmarks.base import Benchmark, Row, published_accuracy
from tasks.models.listwise import Item

HISTORY = ("train", "val", "validation")   # the card says val; older copies validation
SPLITS = (*HISTORY, "test")
CLIP = 40   # words of each earlier prompt / answer in the profile


def _clip(text: str) -> str:
    words = text.split()
    return " ".join(words[:CLIP]) + (" …" if len(words) > CLIP else "")


@register
class PersonalRewardBench(Benchmark):
    name = kind = "personal-rewardbench"
    hub_id = "MichaelR207/chatbot_arena_personalized_0125"
    hub_split = "train"   # the only HF split; the `split` column says which rows are the benchmark
    has_profile = True
    rule = "pairwise accuracy on the split == test rows, a tie wrong (SynthesizeMe's evaluation)"

    def metrics(self, rows, policy):
        return published_accuracy(self.rule, rows)

    def items(self, rows):
        parsed = []
        for raw in self.checked(rows):
            row = Row(raw, "user_id")
            user = row.text("user_id")
            split = row.get("split")
            if split not in SPLITS:
                row.fail("split", "missing" if split is None else f"expected train, val or test, got {split!r}")
            parsed.append((user, split, _prompt(row), row.message_text("chosen"), row.message_text("rejected"), row))
        history: dict[str, list[str]] = {}
        for user, split, prompt, chosen, rejected, _ in parsed:
            if split in HISTORY:
                history.setdefault(user, []).append(
                    f"Asked: {_clip(prompt)} | preferred: {_clip(chosen)} | over: {_clip(rejected)}")
        out = []
        for user, split, prompt, chosen, rejected, row in parsed:
            if split == "test":
                out.append(Item(f"{user}:{row.raw.index}", prompt, (chosen,), (rejected,), subset="all",
                                profile=tuple(history.get(user, ())), meta={"user_id": user}))
        return out


def _prompt(row: Row) -> str:
    """The prompt: a string, or the conversation's messages joined (the last user turn last)."""
    v = row.get("prompt", row.get("context"))
    field = "prompt" if "prompt" in row.data else "context"
    if isinstance(v, str) and v.strip():
        return v
    if isinstance(v, (list, tuple)) and v:
        turns = []
        for i, m in enumerate(v):
            if not isinstance(m, dict) or not isinstance(m.get("content"), str):
                row.fail(f"{field}[{i}]", "expected a message {role, content}")
            turns.append(m["content"] if len(v) == 1 else f"{m.get('role', 'user')}: {m['content']}")
        return "\n".join(turns)
    row.fail(field, "missing" if v is None else "expected a string or a list of messages")
