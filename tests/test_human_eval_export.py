"""human_eval export -> simulated annotators (CSV and Label Studio) -> import: blinding, the key,
and a round trip that recovers the true chosen/rejected sides. Also the helpers the other
test_human_eval_* modules share."""
import csv
import hashlib
import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tasks.core import layout
from tasks.core.artifacts import read_table, write_table
from tasks.core.stage_table import STAGES
from tasks.core.errors import ConfigError
from tasks.stages.human_eval import DIMENSIONS, PERSONAL, RATING_FIELDS, stage
from tasks.stages.human_eval.export import FILES, load_items, seeded_order, write_key
from tests.conftest import ROOT
from tests.stage_project import make_project, save_params

LAYOUT = layout.HUMAN_EVAL   # the stage's artifact paths: the layout module is their one source
# What params.yaml `human_eval:` holds, pinned here (tests do not follow changes of its defaults)
PARAMS = {"splits": ["test"], "raw_dir": "data/human_eval/input/raw", "key": "data/human_eval/input/key.parquet",
          "on_error": "fail", "profile_max_words": 200, "proxy": "always", "proxy_llm": "smollm2",
          "proxy_prompt": "prompts/annotator.txt", "proxy_verdict": "form", "proxy_limit": 10, "proxy_temperature": 0.0,
          "proxy_max_tokens": 40, "parse_retries": 2, "temperature_bump": 0.3,
          "general_gap_max": 0.5, "personal_gap_min": 1.0}
CONFIGS = ("Art_and_Entertainment", "Lifestyle_and_Personal_Development", "Society_and_Culture")


def he_project(root: Path, *, limit=4, llm=None, **overrides) -> dict:
    """Sample project with selected pairs (the ingested reference ones) and a human_eval group."""
    params = make_project(root, configs=CONFIGS, limit=limit, llm=llm)
    pairs = read_table(root / layout.INGEST["pairs"], "pairs").to_pylist()
    write_table([{**p, "source": "reference", "judge_chosen": 1.0, "judge_rejected": 0.0, "valid": True}
                 for p in pairs], root / layout.PAIRS["selected_pairs"], "judged_pairs")
    he = dict(PARAMS)   # pinned here, so a change of defaults in params.yaml cannot break these tests
    he.update(raw_dir=str(root / he["raw_dir"]), key=str(root / he["key"]), proxy_llm="test-llm",
              proxy_prompt=str(ROOT / he["proxy_prompt"]), **overrides)
    params["human_eval"] = he
    save_params(root, params)
    return params


def inputs(root: Path) -> dict:
    return {k: str(root / v) for k, v in STAGES["human_eval"].inputs.items()}


def outputs(root: Path) -> dict:
    return {k: str(root / v) for k, v in LAYOUT.items()}


def run_stage(root: Path, params: dict) -> dict:
    return stage.run(params, inputs(root), outputs(root))


def export(root: Path, params: dict, out: Path, limit=None) -> list[dict]:
    """What `prbench human-eval export` does, from the project's tables; returns the items."""
    from tasks.stages.human_eval.export import write_export

    p, seed = params["human_eval"], params["common"]["seed"]
    items = seeded_order(load_items(inputs(root), p["splits"], p["profile_max_words"]), seed)[:limit]
    write_key(items, seed, p["key"], out)
    write_export(items, seed, out)
    return items


def truth(root: Path) -> dict[str, str]:
    """answer text -> chosen | rejected: what a simulated annotator 'perceives'."""
    pairs = read_table(root / layout.PAIRS["selected_pairs"], "judged_pairs").to_pylist()
    return {**{p["chosen"]: "chosen" for p in pairs}, **{p["rejected"]: "rejected" for p in pairs}}


def intended(item_id: str, side: str, dim: str) -> int:
    """A simulated annotator's rating: personal fit 5 vs 1-2; general quality 4 or 5 per item and
    dimension, the same on both sides (parity is judged per item, so equal quality means equal there)."""
    if dim == PERSONAL:
        h = hashlib.sha256(f"{item_id}:{side}:{dim}".encode()).digest()[0]
        return 5 if side == "chosen" else 1 + h % 2
    return 4 + hashlib.sha256(f"{item_id}:{dim}".encode()).digest()[0] % 2


def sides(task: dict, seen: dict) -> dict:
    return {"A": seen[task["answer_a"]], "B": seen[task["answer_b"]]}


def fill_csv(export_dir: Path, dest: Path, seen: dict, annotator: str = "", change=None) -> Path:
    rows = list(csv.DictReader(io.StringIO((export_dir / FILES["csv"]).read_text(encoding="utf-8-sig"))))
    for r in rows:
        s = sides(r, seen)
        r["annotator"] = annotator
        for f, (answer, dim) in RATING_FIELDS.items():
            r[f] = str(intended(r["item_id"], s[answer], dim))
        if change:
            change(r)
    dest.parent.mkdir(parents=True, exist_ok=True)
    with open(dest, "w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return dest


def fill_labelstudio(export_dir: Path, dest: Path, seen: dict, user: dict) -> Path:
    """A Label Studio 'JSON' export of the imported tasks, every task annotated by `user`."""
    tasks = json.loads((export_dir / FILES["labelstudio_tasks"]).read_text())
    for i, t in enumerate(tasks):
        s = sides(t["data"], seen)
        t["id"] = 100 + i
        t["annotations"] = [{"id": 500 + i, "completed_by": user, "was_cancelled": False, "result": [
            {"from_name": f, "to_name": f"answer_{a.lower()}", "type": "rating",
             "value": {"rating": intended(t["data"]["item_id"], s[a], d)}} for f, (a, d) in RATING_FIELDS.items()]}]
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(tasks, indent=1))
    return dest


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    root = tmp_path_factory.mktemp("he_export")
    params = he_project(root)
    items = export(root, params, root / "for_annotators")
    return root, params, items


def test_export_is_blinded_and_the_key_kept_apart(exported):
    root, params, items = exported
    out, key_path = root / "for_annotators", Path(params["human_eval"]["key"])
    assert sorted(p.name for p in out.iterdir()) == sorted(FILES.values())
    assert not key_path.is_relative_to(out)
    header = next(csv.reader(io.StringIO((out / FILES["csv"]).read_text(encoding="utf-8-sig"))))
    assert not {"chosen", "rejected", "side", "chosen_answer"} & set(header)
    assert set(RATING_FIELDS) <= set(header)
    tasks = json.loads((out / FILES["labelstudio_tasks"]).read_text())
    assert len(tasks) == len(items) == 12
    assert set(tasks[0]["data"]) == {"item_id", "question", "aspects", "profile", "answer_a", "answer_b"}

    seen, key = truth(root), {k["item_id"]: k for k in read_table(key_path, "human_eval_key").to_pylist()}
    for t in tasks:   # the key says which shown answer is the chosen one
        chosen = t["data"][f"answer_{key[t['data']['item_id']]['chosen_answer'].lower()}"]
        assert seen[chosen] == "chosen"
    assert {k["chosen_answer"] for k in key.values()} == {"A", "B"}, "the chosen answer is not always first"
    assert len({k["domain"] for k in key.values()}) == 3


def test_labelstudio_config_has_four_1_to_5_ratings_per_answer(exported):
    root, _, _ = exported
    tree = ET.fromstring((root / "for_annotators" / FILES["labelstudio_config"]).read_text())
    texts = {t.get("name"): t.get("value") for t in tree.iter("Text")}
    ratings = {r.get("name"): r for r in tree.iter("Rating")}
    assert set(ratings) == set(RATING_FIELDS)
    assert all(r.get("maxRating") == "5" and r.get("toName") in texts for r in ratings.values())
    assert texts["answer_a"] == "$answer_a" and texts["answer_b"] == "$answer_b"


def test_export_is_reproducible_and_an_existing_key_is_protected(exported, tmp_path):
    root, params, items = exported
    key_path, seed = params["human_eval"]["key"], params["common"]["seed"]
    before = Path(key_path).read_bytes()
    write_key(items, seed, key_path, tmp_path)                       # same pairs, same seed: same key
    assert Path(key_path).read_bytes() == before
    write_key(items[:5], seed, tmp_path / "small.parquet", tmp_path / "x")
    write_key(items, seed, tmp_path / "small.parquet", tmp_path / "x")   # growing a key is safe
    with pytest.raises(ConfigError, match="differs for .* Use --force"):
        write_key(items, seed + 1, key_path, tmp_path)               # another seed reshuffles A/B
    with pytest.raises(ConfigError, match="inside the annotators' folder"):
        write_key(items, seed, tmp_path / "out" / "key.parquet", tmp_path / "out")


def test_cli_export_writes_the_same_files(exported, tmp_path, monkeypatch, capsys):
    import argparse

    from tasks.ops.human_eval_cli import add_parser

    root, _, _ = exported
    ap = argparse.ArgumentParser()
    add_parser(ap.add_subparsers(dest="command"))
    monkeypatch.chdir(root)
    args = ap.parse_args(["human-eval", "export", "--out", str(tmp_path / "again")])
    assert args.func(args) == 0
    for name in FILES.values():
        assert (tmp_path / "again" / name).read_bytes() == (root / "for_annotators" / name).read_bytes()
    assert "unblinding key" in capsys.readouterr().out
    args = ap.parse_args(["human-eval", "export", "--out", str(tmp_path / "b"), "--limit", "3", "--key",
                          str(tmp_path / "k.parquet")])
    assert args.func(args) == 0 and len(read_table(tmp_path / "k.parquet", "human_eval_key")) == 3


def test_round_trip_csv_and_labelstudio_recovers_sides(exported, figures):
    root, params, items = exported
    raw, seen = Path(params["human_eval"]["raw_dir"]), truth(root)
    fill_csv(root / "for_annotators", raw / "alice.csv", seen)                   # name from the file
    fill_labelstudio(root / "for_annotators", raw / "ls_export.json", seen, {"id": 2, "email": "bob@example.org"})
    m = run_stage(root, {**params, "human_eval": {**params["human_eval"], "proxy": "never"}})

    ratings = pq.read_table(root / LAYOUT["ratings"]).to_pylist()
    assert len(ratings) == 2 * len(items) * 8
    assert {r["annotator"] for r in ratings} == {"alice", "bob@example.org"}
    assert all(r["score"] == intended(r["item_id"], r["side"], r["dimension"]) for r in ratings)
    assert all(r["annotator_kind"] == "human" for r in ratings)

    human = m["human"]
    assert m["source"] == "human" and m["llm-proxy"] is None and human["annotators"] == 2
    assert all(human["agreement"][d]["alpha_ordinal"] == 1.0 for d in DIMENSIONS)   # identical annotators
    assert human["per_dimension"][PERSONAL]["all"]["chosen"]["mean"] == 5.0
    assert human["wilcoxon"][PERSONAL]["rank_biserial"] == 1.0 and human["wilcoxon"][PERSONAL]["p_value"] < 0.01
    assert human["parity"]["holds"] is True and human["parity"]["personal_gap"] >= 3
    assert set(human["per_dimension"]["factuality"]) == {"all", "Art", "Lifestyle", "Society"}
    (ax,) = figures[Path(LAYOUT["plot"]).name]
    assert {label: [v for _, v in bars] for label, bars in ax["bars"].items()} == {
        f"human: {side}": [human["per_dimension"][d]["all"][side]["mean"] for d in DIMENSIONS]
        for side in ("chosen", "rejected")}, "a bar per dimension and side at its mean rating"
    assert (root / LAYOUT["plot"]).exists()


def test_one_disagreement_lowers_alpha_of_that_dimension_only(exported, tmp_path):
    root, params, _ = exported
    raw, seen = tmp_path / "raw", truth(root)
    fill_csv(root / "for_annotators", raw / "alice.csv", seen)
    first = {}

    def disagree(row):   # carol gives the first item's answer A one point less on relevance
        if not first:
            first["done"] = True
            row["a_relevance"] = str(int(row["a_relevance"]) - 1)
    fill_csv(root / "for_annotators", raw / "carol.csv", seen, change=disagree)
    m = run_stage(root, {**params, "human_eval": {**params["human_eval"], "raw_dir": str(raw), "proxy": "never"}})
    alpha = {d: a["alpha_ordinal"] for d, a in m["human"]["agreement"].items()}
    assert alpha["relevance"] < 1.0
    assert all(alpha[d] == 1.0 for d in DIMENSIONS if d != "relevance")


def test_params_yaml_group_has_every_key_the_stage_reads():
    import yaml

    group = yaml.safe_load((ROOT / "params.yaml").read_text()).get("human_eval")
    assert group is not None, "params.yaml has no human_eval group: the human_eval stage cannot run"
    assert set(group) == set(PARAMS)
