"""Blinded annotation tasks from the selected pairs: the two answers as A and B in a seeded
order, no chosen/rejected label anywhere; the key that unblinds them is written elsewhere."""
from __future__ import annotations

import csv
import hashlib
import io
import json
from pathlib import Path
from xml.sax.saxutils import quoteattr

from tasks.core.errors import ConfigError, DataError
from tasks.stages.human_eval import ANSWERS, DIMENSIONS, RATING_FIELDS, SCALE, dimensions_text, rating_field

TEXT_FIELDS = ("item_id", "annotator", "question", "aspects", "profile", "answer_a", "answer_b")
FILES = {"csv": "tasks.csv", "labelstudio_tasks": "labelstudio_tasks.json",
         "labelstudio_config": "labelstudio_config.xml", "guidelines": "guidelines.md"}


def _h(*parts) -> bytes:
    return hashlib.sha256(":".join(map(str, parts)).encode("utf-8")).digest()


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def chosen_answer(seed: int, question_id: str) -> str:
    """Per item, not per batch: adding pairs later never reshuffles the ones already rated."""
    return ANSWERS[_h(seed, "ab", question_id)[0] % 2]


def seeded_order(items: list[dict], seed: int) -> list[dict]:
    """A seeded shuffle, so a --limit takes a spread of domains rather than the first block."""
    return sorted(items, key=lambda it: _h(seed, "order", it["question_id"]))


def _clip(text: str, max_words: int) -> str:
    words = text.split(" ")
    return text if len(words) <= max_words else " ".join(words[:max_words]) + " …"


def load_items(inputs: dict, splits, profile_max_words: int) -> list[dict]:
    """One item per selected pair, with what an annotator needs beside the two answers."""
    from tasks.core.artifacts import read_table

    questions = {q["id"]: q for q in read_table(inputs["questions"], "questions").to_pylist()}
    contexts = {c["question_id"]: c["profile_text"]
                for c in read_table(inputs["profile_context"], "profile_context").to_pylist()}
    items, seen = [], set()
    for i, p in enumerate(read_table(inputs["pairs"], "judged_pairs").to_pylist()):
        qid = p["question_id"]
        if p["split"] not in splits:
            continue
        for missing, where in ((qid in seen, "a second pair for this question"),
                               (qid not in questions, "question not in the questions table"),
                               (qid not in contexts, "no profile context for this question")):
            if missing:
                raise DataError(inputs["pairs"], where, row=i, row_id=qid, field="question_id")
        seen.add(qid)
        q = questions[qid]
        items.append({"item_id": qid, "question_id": qid, "domain": p["domain"], "split": p["split"],
                      "question": q["question"], "profile": _clip(contexts[qid], profile_max_words),
                      "aspects": "\n".join(f"- {a['aspect']}: {a['reason']}" for a in q["rubric_aspects"]),
                      "chosen": p["chosen"], "rejected": p["rejected"]})
    return items


def blind(item: dict, seed: int) -> dict:
    a_is_chosen = chosen_answer(seed, item["question_id"]) == "A"
    first, second = (item["chosen"], item["rejected"]) if a_is_chosen else (item["rejected"], item["chosen"])
    return {"item_id": item["item_id"], "question": item["question"], "aspects": item["aspects"],
            "profile": item["profile"], "answer_a": first, "answer_b": second}


def key_rows(items: list[dict], seed: int) -> list[dict]:
    rows = []
    for it in items:
        t = blind(it, seed)
        rows.append({"item_id": it["item_id"], "question_id": it["question_id"], "domain": it["domain"],
                     "split": it["split"], "chosen_answer": chosen_answer(seed, it["question_id"]),
                     "answer_a_sha256": sha256(t["answer_a"]), "answer_b_sha256": sha256(t["answer_b"]),
                     "seed": seed})
    return rows


def labelstudio_config() -> str:
    """Four 1-5 Rating controls per answer; control names are the CSV's rating columns."""
    lines = ["<View>", '  <Header value="Question"/>', '  <Text name="question" value="$question"/>',
             '  <Header value="What this user cares about"/>', '  <Text name="aspects" value="$aspects"/>',
             '  <Header value="Excerpt of the user\'s past posts"/>', '  <Text name="profile" value="$profile"/>']
    for a in ANSWERS:
        text = f"answer_{a.lower()}"
        lines += [f'  <Header value="Answer {a}"/>', f'  <Text name="{text}" value="${text}"/>']
        for dim, (label, _) in DIMENSIONS.items():
            lines += [f"  <Header size=\"6\" value={quoteattr(f'{label} of answer {a}')}/>",
                      f'  <Rating name="{rating_field(a, dim)}" toName="{text}" maxRating="{SCALE[1]}" required="true"/>']
    return "\n".join([*lines, "</View>", ""])


def guidelines() -> str:
    return ("# Rating the answers\n\nEach item shows a question, what its asker cares about and an excerpt of "
            "their past posts, then two answers, A and B. Rate each answer on each dimension from 1 to 5 "
            "(whole numbers), independently of the other answer:\n\n" + dimensions_text() + "\n\n"
            "In tasks.csv fill the eight columns a_* and b_* (and `annotator` with your name), leave the "
            "rest as it is, and return the file. A row left entirely blank counts as not rated.\n")


def write_export(items: list[dict], seed: int, out_dir: str | Path) -> dict:
    """The annotators' folder: CSV, Label Studio tasks + config, guidelines. No key in it."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tasks = [blind(it, seed) for it in items]
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=[*TEXT_FIELDS, *RATING_FIELDS, "comment"], lineterminator="\n")
    writer.writeheader()
    writer.writerows({**t, "annotator": ""} for t in tasks)
    texts = {"csv": buf.getvalue(), "labelstudio_config": labelstudio_config(), "guidelines": guidelines(),
             "labelstudio_tasks": json.dumps([{"data": t} for t in tasks], indent=1, ensure_ascii=False) + "\n"}
    for name, text in texts.items():
        (out / FILES[name]).write_text(text, encoding="utf-8-sig" if name == "csv" else "utf-8")
    return {name: str(out / f) for name, f in FILES.items()}


def write_key(items: list[dict], seed: int, key_path: str | Path, out_dir: str | Path, force: bool = False) -> Path:
    """Refuses to change or drop an item of an existing key: annotations made against it would be
    unblinded wrongly or no longer found."""
    from tasks.core.artifacts import read_table, write_table

    key_path = Path(key_path)
    if key_path.resolve().is_relative_to(Path(out_dir).resolve()):
        raise ConfigError(f"human_eval.key: {key_path} is inside the annotators' folder {out_dir}")
    rows = key_rows(items, seed)
    old = read_table(key_path, "human_eval_key").to_pylist() if key_path.exists() else []
    changed = [r["item_id"] for r in old if r not in rows]   # growing the key (a larger --limit) is safe
    if changed and not force:
        raise ConfigError(f"{key_path}: the existing unblinding key differs for {len(changed)} item(s), e.g. "
                          f"'{changed[0]}' (pairs, seed or limit changed); annotations made against it would be "
                          "unblinded wrongly. Use --force to replace it")
    return write_table(rows, key_path, "human_eval_key")
