"""The train_rm stage on toy pairs: it learns a marker word, trains on the train split only, its
folder loads as `bradley-terry`, a failed run leaves no half-written folder, and the flow caches."""
import json
import os
from pathlib import Path

import pytest
import yaml

from tasks.core import layout
from tasks.stages import train_rm
from tasks.core.artifacts import file_hash, write_table
from tasks.core.errors import ConfigError
from tasks.models.rms.registry import make_rm
from tasks.core.runlog import read_counters
from tests.conftest import BYTECODE, ROOT, flow_log_lines

TOPICS = ["budget travel in spring", "learning the guitar", "cooking for one", "a first marathon",
          "watercolour painting", "saving for a flat", "growing tomatoes", "reading more books"]
TEST_MARK = "HELDOUT"
P = {"backbone": "embedded:all-MiniLM-L6-v2", "strategy": "raw_profile", "splits": ["train"], "max_length": 128,
     "epochs": 3, "learning_rate": 5e-5, "batch_size": 4}


def toy_project(root: Path, n_train=16, n_test=6) -> dict:
    """Pairs whose chosen answer alone has the word 'pineapple'; test rows carry TEST_MARK."""
    qs, ctx, pairs = [], [], []
    for i in range(n_train + n_test):
        split, qid, topic = ("train" if i < n_train else "test"), f"q{i}", TOPICS[i % len(TOPICS)]
        mark = f"{TEST_MARK} " if split == "test" else ""
        qs.append({"id": qid, "domain": "Lifestyle", "split": split, "category": "c", "narrative": "n",
                   "question": f"How do I get started with {topic}?",
                   "rubric_aspects": [{"aspect": "Budget", "evidence": "e", "reason": "r"}]})
        ctx.append({"question_id": qid, "retriever": "bm25", "k": 1, "item_ids": ["p"],
                    "profile_text": f"I posted about {topic} last year."})
        pairs.append({"question_id": qid, "domain": "Lifestyle", "split": split,
                      "chosen": f"{mark}Start small with {topic} and keep a pineapple notebook of progress.",
                      "rejected": f"{mark}Start small with {topic} and keep a simple notebook of progress.",
                      "generator": "reference:toy", "chosen_words": 11, "rejected_words": 11, "length_ratio": 1.0,
                      "source": "reference", "judge_chosen": 1.0, "judge_rejected": 0.0, "valid": True})
    write_table(qs, root / layout.INGEST["questions"], "questions")
    write_table(ctx, root / layout.PROFILES["profile_context"], "profile_context")
    write_table(pairs, root / layout.PAIRS["selected_pairs"], "judged_pairs")
    write_table([p for p in pairs if p["split"] == "train"], root / layout.PAIRS["train_pairs"], "judged_pairs")
    return {"train_pairs": str(root / layout.PAIRS["train_pairs"]),
            "questions": str(root / layout.INGEST["questions"]),
            "profile_context": str(root / layout.PROFILES["profile_context"])}


def outputs(root: Path) -> dict:
    return {k: str(root / v) for k, v in layout.TRAIN_RM.items()}


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """One training run, recording every text the encoder saw."""
    import tasks.models.rms.seq_cls as seq_cls

    root, seen, real = tmp_path_factory.mktemp("train_rm"), [], seq_cls.encode_many

    def recording(tok, items, *args, **kw):
        seen.extend(t for item in items for t in item)
        return real(tok, items, *args, **kw)

    mp = pytest.MonkeyPatch()
    mp.setattr(train_rm, "encode_many", recording)
    mp.setattr(seq_cls, "encode_many", recording)
    try:
        metrics = train_rm.run({"common": {"seed": 2604}, "train_rm": P}, toy_project(root), outputs(root))
    finally:
        mp.undo()
    return root, metrics, seen


def test_learns_the_marker_and_reports_metrics(trained):
    root, metrics, _ = trained
    assert metrics["pairs_used"] == 16 and metrics["epochs"] == 3 and metrics["steps"] == 12
    assert metrics["train_accuracy"] >= 0.8, metrics
    assert metrics["final_train_loss"] < 0.693, metrics   # below chance (log 2)
    assert metrics["backbone"].startswith("embedded:all-MiniLM-L6-v2@") and metrics["empty_context_pairs"] == 0
    written = json.loads(Path(outputs(root)["metrics"]).read_text())
    assert written == {k: v for k, v in metrics.items() if k != "run"}, "results only: no wall time in DVC metrics"
    assert read_counters(outputs(root)["metrics"])["seconds"] > 0


def test_never_reads_test_split_pairs(trained):
    _, _, seen = trained
    assert seen and not any(TEST_MARK in text for text in seen)


def test_training_again_elsewhere_gives_the_same_bytes(trained, tmp_path):
    """Same seed, another project path and output path: every saved file is byte-identical, and
    none records where the backbone or the checkout lives."""
    root, metrics, _ = trained
    other = tmp_path / "another" / "checkout"
    out = {k: str(other / v) for k, v in layout.TRAIN_RM.items()}
    again = train_rm.run({"common": {"seed": 2604}, "train_rm": P}, toy_project(other), out)
    first, second = Path(outputs(root)["model"]), Path(out["model"])
    assert {f.name: file_hash(f) for f in first.iterdir()} == {f.name: file_hash(f) for f in second.iterdir()}
    assert again["model_hash"] == metrics["model_hash"] and again["final_train_loss"] == metrics["final_train_loss"]
    saved = " ".join(f.read_text() for f in second.glob("*.json"))
    assert "site-packages" not in saved and str(other) not in saved and "_name_or_path" not in saved


def test_saved_folder_scores_as_bradley_terry(trained, monkeypatch):
    import pyarrow.parquet as pq

    from tasks.models.rms.base import PairInput

    root, _, _ = trained
    model_dir = Path(outputs(root)["model"])
    assert sorted(f.name for f in model_dir.iterdir()) == ["config.json", "model.safetensors", "tokenizer.json",
                                                           "tokenizer_config.json"]   # no optimizer state
    assert not [p for p in model_dir.parent.iterdir() if p.name.startswith(".")]   # no temp folder left
    monkeypatch.chdir(root)   # bradley-terry's default model is the stage output, relative to the project
    rm = make_rm("bt", {"kind": "bradley-terry", "max_length": 128}, None)
    assert rm.identity().startswith(f"bradley-terry:{layout.TRAIN_RM['model']}@default:")
    questions = {q["id"]: q["question"] for q in pq.read_table(root / layout.INGEST["questions"]).to_pylist()}
    ctx = {c["question_id"]: f"My past posts:\n{c['profile_text']}"
           for c in pq.read_table(root / layout.PROFILES["profile_context"]).to_pylist()}
    pairs = [PairInput(p["question_id"], questions[p["question_id"]], ctx[p["question_id"]], p["chosen"], p["rejected"])
             for p in pq.read_table(root / layout.PAIRS["selected_pairs"]).to_pylist()]
    wins = [s.chosen.score > s.rejected.score for s in rm.score_pairs(pairs)]
    assert sum(wins[:16]) >= 13 and sum(wins[16:]) >= 4, wins   # train pairs, then the held-out ones


def test_failed_run_leaves_the_previous_model_untouched(tmp_path, monkeypatch):
    inputs, out = toy_project(tmp_path), outputs(tmp_path)
    model = Path(out["model"])
    model.mkdir(parents=True)
    (model / "config.json").write_text("previous")

    def crash(backbone, tok, encoded, p, seed, save_to):
        (Path(save_to) / "model.safetensors").write_bytes(b"half")
        raise RuntimeError("killed mid-save")

    monkeypatch.setattr(train_rm, "train", crash)
    with pytest.raises(RuntimeError):
        train_rm.run({"common": {"seed": 1}, "train_rm": P}, inputs, out)
    assert [f.name for f in model.iterdir()] == ["config.json"] and (model / "config.json").read_text() == "previous"
    assert sorted(p.name for p in model.parent.iterdir()) == ["bradley-terry"]
    assert not Path(out["metrics"]).exists()


def test_no_pairs_in_the_training_splits_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="train_rm.splits"):
        train_rm.run({"common": {"seed": 1}, "train_rm": {**P, "splits": ["dev"]}}, toy_project(tmp_path),
                     outputs(tmp_path))


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_flow_caches_and_retrains_identically_when_the_model_is_removed(tmp_path, monkeypatch, prefect_harness):
    from flows.common import main
    from flows.stage import flow_of
    train_rm_flow = flow_of("train_rm")

    toy_project(tmp_path)
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["common"]["cache_dir"] = str(tmp_path / "cache")
    params["train_rm"] = {**P, "epochs": 1}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    monkeypatch.chdir(tmp_path)

    assert main(train_rm_flow) == 0
    weights = Path(layout.TRAIN_RM["model"]) / "model.safetensors"
    first, stamp = file_hash(weights), weights.stat().st_mtime_ns
    assert main(train_rm_flow) == 0 and weights.stat().st_mtime_ns == stamp   # served from the cache
    os.remove(weights)
    assert main(train_rm_flow) == 0 and file_hash(weights) == first           # retrained, same bytes
    lines = flow_log_lines("train_rm")
    assert lines and not any(BYTECODE.search(m) for m in lines), "no disassembly in the run's log"
