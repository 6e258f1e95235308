"""`prism` (HannahRoseKirk/prism-alignment, its card's `configs:`; split train): configs `survey` (one row per user: self_description,
system_string, stated_prefs ...) and `conversations` (conversation_id, user_id, conversation_type,
conversation_history: a list of turns {turn, role, content, score, if_chosen, model_name ...}).

Best-of-4 from the opening turn: its model responses (role `model`, turn 0) carry the user's 1-100
ratings; the highest-rated ones are correct, the strictly lower-rated ones incorrect (an opening turn
with one response, or all rated alike, is left out and counted). The user's survey answers are the
profile. A local copy is a folder holding `survey.*` and `conversations.*` (JSONL, JSON or Parquet)."""
from __future__ import annotations


from tasks.stages.benchmarks import register
from tasks.stages.benchmarks.base import Benchmark, Row, published_accuracy
from tasks.core.errors import ConfigError
from tasks.models.listwise import Item
from tasks.stages.sources import read_file

PREFS = ("values", "creativity", "fluency", "factuality", "diversity", "safety", "personalisation", "helpfulness")


@register
class Prism(Benchmark):
    name = kind = "prism"
    hub_id = "HannahRoseKirk/prism-alignment"
    hub_split = "train"
    subsets = ("unguided", "values guided", "controversy guided")   # conversation_type, as its card lists them
    has_profile = True
    rule = "the user's top-rated opening response above every lower-rated one, a tie wrong (PRISM's 1-100 ratings)"

    def raw_rows(self, path, hub_id):
        if path:
            parts = {}
            for f in self.files(path):
                part = f.name.split(".")[0].split("-")[0]
                parts.setdefault(part, []).append(f)
            missing = [p for p in ("survey", "conversations") if p not in parts]
            if missing:
                raise ConfigError(f"benchmarks (prism): no {' or '.join(missing)} file under '{path}' "
                                  "(expected survey.jsonl and conversations.jsonl, or .json / .parquet)")
            read = lambda name: (r for f in parts[name] for r in read_file(f))  # noqa: E731
        else:
            hub = hub_id or self.hub_id
            read = lambda name: self.hub_rows(hub, name)  # noqa: E731
        return read("survey"), read("conversations")

    def items(self, rows):
        survey_rows, conversations = rows
        profiles = {}
        for raw in survey_rows:
            row = self._row(raw, "user_id")
            profiles[row.id] = _profile(row)
        self.left_out = 0
        out = []
        for raw in conversations:
            row = self._row(raw, "conversation_id")
            item = self._item(row, profiles)
            if item is None:
                self.left_out += 1
            else:
                out.append(item)
        return out

    def _row(self, raw, id_field) -> Row:
        row = Row(next(self.checked([raw])), id_field)
        row.required_id()
        return row

    def _item(self, row: Row, profiles: dict) -> Item | None:
        user = row.text("user_id")
        if user not in profiles:
            row.fail("user_id", f"user '{user}' is not in the survey")
        history = row.get("conversation_history")
        if not isinstance(history, (list, tuple)) or not history:
            row.fail("conversation_history", "expected a non-empty list of turns")
        prompt, rated = None, []
        for i, t in enumerate(history):
            if not isinstance(t, dict):
                row.fail(f"conversation_history[{i}]", "expected a turn object")
            if t.get("turn") != 0:
                continue
            content = t.get("content")
            if not isinstance(content, str) or not content.strip():
                row.fail(f"conversation_history[{i}].content", "expected a non-empty string")
            if t.get("role") == "user":
                prompt = prompt or content
            elif t.get("role") == "model":
                score = t.get("score")
                if isinstance(score, bool) or not isinstance(score, (int, float)):
                    row.fail(f"conversation_history[{i}].score", f"expected a rating, got {score!r}")
                rated.append((float(score), content))
            else:
                row.fail(f"conversation_history[{i}].role", f"expected user or model, got {t.get('role')!r}")
        if prompt is None:
            row.fail("conversation_history", "no user message in the opening turn")
        if len(rated) < 2 or len({s for s, _ in rated}) < 2:
            return None
        top = max(s for s, _ in rated)
        return Item(row.id, prompt, tuple(a for s, a in rated if s == top), tuple(a for s, a in rated if s < top),
                    subset=row.text("conversation_type", required=False) or "all", profile=profiles[user],
                    meta={"user_id": user})

    def metrics(self, rows, policy):
        return {**published_accuracy(self.rule, rows), "left_out": getattr(self, "left_out", 0)}


def _profile(row: Row) -> tuple[str, ...]:
    """The survey as profile lines: self-description, the system prompt the user wrote, stated preferences."""
    lines = []
    for field, label in (("self_description", "About me"), ("system_string", "How an assistant should behave")):
        v = row.text(field, required=False)
        if v:
            lines.append(f"{label}: {v}")
    prefs = row.get("stated_prefs")
    if prefs is not None:
        if not isinstance(prefs, dict):
            row.fail("stated_prefs", f"expected an object of ratings, got {type(prefs).__name__}")
        rated = [f"{k} {prefs[k]}" for k in PREFS if prefs.get(k) is not None]
        if rated:
            lines.append("What matters to me (0-100): " + ", ".join(rated))
    if not lines:
        row.fail("self_description", "the survey row has no self_description, system_string or stated_prefs")
    return tuple(lines)
