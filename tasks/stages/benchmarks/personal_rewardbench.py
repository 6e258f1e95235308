"""`personal-rewardbench` (SynthesizeMe, arXiv 2506.05598; MichaelR207/chatbotarena_personalized_0125
and MichaelR207/prism_personalized_0125): per-user preference pairs {user_id, prompt (a string or the
conversation as messages), chosen, rejected (strings or messages), split}. The user's earlier
preferences are the context: every pair of the same user in the train / validation splits, as
"prompt -> preferred over rejected" lines, is the profile of that user's test pairs. A local copy is
the hub's `data/{split}-*.parquet` (the split from the file name) or JSONL/JSON rows with `split`."""
from __future__ import annotations

from tasks.stages.benchmarks import register
from tasks.stages.benchmarks.base import Benchmark, Row
from tasks.models.listwise import Item

HISTORY = ("train", "validation")
CLIP = 40   # words of each earlier prompt / answer in the profile


def _clip(text: str) -> str:
    words = text.split()
    return " ".join(words[:CLIP]) + (" …" if len(words) > CLIP else "")


@register
class PersonalRewardBench(Benchmark):
    name = kind = "personal-rewardbench"
    hub_id = "MichaelR207/chatbotarena_personalized_0125"
    has_profile = True

    def raw_rows(self, path, hub_id):
        if path:
            yield from super().raw_rows(path, None)
            return
        for split in ("train", "validation", "test"):
            yield from self.hub_rows(hub_id or self.hub_id, None, split)

    def items(self, rows):
        parsed = []
        for raw in self.checked(rows):
            row = Row(raw, "user_id")
            user = row.text("user_id")
            split = row.get("split") or _split_of(raw.file)
            if split not in ("train", "validation", "test"):
                row.fail("split", f"expected train, validation or test, got {split!r}")
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


def _split_of(label: str) -> str | None:
    name = label.replace("\\", "/").rsplit("/", 1)[-1]
    for split in ("train", "validation", "test"):
        if name.startswith(split):
            return split
    return None


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
