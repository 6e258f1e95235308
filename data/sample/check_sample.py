"""Checks the hand-written sample against the properties the README promises.

Usage: python data/sample/check_sample.py [Config_split ...]   (stdlib only)
"""
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DOMAINS = {
    "Art_and_Entertainment": ("1", "anime boardgames gaming literature movies music musicfans rpg scifi sound"),
    "Lifestyle_and_Personal_Development": ("2", "bicycles cooking diy fitness freelancing gardening health lifehacks "
                                          "martialarts outdoors parenting pets sports sustainability travel woodworking workplace writers"),
    "Society_and_Culture": ("3", "academia buddhism christianity english expatriates genealogy hermeneutics hinduism "
                            "history interpersonal islam judaism law linguistics money philosophy politics skeptics vegetarianism"),
}
ALL_CATEGORIES = {c for _, cats in DOMAINS.values() for c in cats.split()}
MIN_QUESTIONS = {"test": 10, "train": 15}


def words(text):
    return len(re.findall(r"\S+", text))


def check(stem):
    errors = []
    config, split = stem.rsplit("_", 1)
    digit, cats = DOMAINS[config]
    rows = json.loads((HERE / "lamp_qa" / f"{stem}.json").read_text(encoding="utf-8"))
    pairs = json.loads((HERE / "pairs" / f"{stem}.json").read_text(encoding="utf-8"))
    pairs_by_id = {p["id"]: p for p in pairs}
    if len(rows) < MIN_QUESTIONS[split]:
        errors.append(f"{stem}: {len(rows)} questions, need >= {MIN_QUESTIONS[split]}")
    seen = set()
    chosen_longer = 0
    for i, row in enumerate(rows):
        where = f"{stem}[{i}] id={row.get('id')}"
        if list(row) != ["id", "question", "profile", "rubric_aspects", "narrative", "category"]:
            errors.append(f"{where}: keys {list(row)}")
            continue
        qid = row["id"]
        if not re.fullmatch(rf"{digit}_{0 if split == 'test' else 1}_\d+", qid):
            errors.append(f"{where}: id must look like {digit}_{0 if split == 'test' else 1}_<n>")
        if qid in seen:
            errors.append(f"{where}: duplicate id")
        seen.add(qid)
        if not 6 <= words(row["question"]) <= 22:
            errors.append(f"{where}: question has {words(row['question'])} words")
        if row["category"] not in cats.split():
            errors.append(f"{where}: category {row['category']!r} not in this domain")
        if not 70 <= words(row["narrative"]) <= 200:
            errors.append(f"{where}: narrative has {words(row['narrative'])} words (70-200)")
        prof = row["profile"]
        if not 15 <= len(prof) <= 40:
            errors.append(f"{where}: profile has {len(prof)} posts (15-40)")
        for k, item in enumerate(prof):
            if list(item) != ["category", "id", "text"]:
                errors.append(f"{where}: profile[{k}] keys {list(item)}")
                continue
            if item["id"] != f"{qid}_{k}":
                errors.append(f"{where}: profile[{k}].id should be {qid}_{k}")
            if item["category"] not in ALL_CATEGORIES:
                errors.append(f"{where}: profile[{k}].category {item['category']!r} unknown")
            if not 15 <= words(item["text"]) <= 160:
                errors.append(f"{where}: profile[{k}].text has {words(item['text'])} words (15-160)")
        aspects = row["rubric_aspects"]
        if not 3 <= len(aspects) <= 6:
            errors.append(f"{where}: {len(aspects)} rubric aspects (3-6)")
        for k, a in enumerate(aspects):
            if list(a) != ["aspect", "evidence", "reason"]:
                errors.append(f"{where}: rubric_aspects[{k}] keys {list(a)}")
                continue
            if a["evidence"] not in row["narrative"]:
                errors.append(f"{where}: rubric_aspects[{k}].evidence is not a verbatim quote of the narrative")
        pair = pairs_by_id.get(qid)
        if pair is None:
            errors.append(f"{where}: no reference pair")
            continue
        wc, wr = words(pair["chosen"]), words(pair["rejected"])
        for name, n in (("chosen", wc), ("rejected", wr)):
            if not 70 <= n <= 100:
                errors.append(f"{where}: pair {name} has {n} words (70-100)")
        if max(wc, wr) > 1.15 * min(wc, wr):
            errors.append(f"{where}: pair lengths {wc}/{wr} differ by more than 15%")
        chosen_longer += wc > wr
    if set(pairs_by_id) != seen:
        errors.append(f"{stem}: pair ids differ from question ids: {sorted(set(pairs_by_id) ^ seen)}")
    share = chosen_longer / max(len(rows), 1)
    if not 0.3 <= share <= 0.7:
        errors.append(f"{stem}: chosen is longer in {share:.0%} of pairs (want 30-70%)")
    return errors


def main(argv):
    stems = argv or sorted(p.stem for p in (HERE / "lamp_qa").glob("*.json"))
    errors = [e for stem in stems for e in check(stem)]
    print("\n".join(errors) if errors else f"OK: {', '.join(stems)}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
