"""The train_rm stage: a Bradley-Terry reward model (trl's RewardTrainer, a seq-cls head with one
logit) on the selected pairs of the training splits only; the test split is the benchmark.

Inputs are built by `tasks.models.rms.encode.encode_many`, the function the scorer uses, and passed
pre-tokenized: BERT-style backbones have no EOS token for trl's own text path to append."""
from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tasks.core.artifacts import replace_dir
from tasks.core.determinism import deterministic, scrub_saved
from tasks.core.errors import ConfigError
from tasks.models.rms.encode import encode_many
from tasks.models.rms.seq_cls import SeqClsRM
from tasks.models.strategies import check_benchmark_strategy, load_contexts


def read_train_pairs(path: str, splits: list[str]) -> list[dict]:
    """The selected pairs of `splits`, filtered while reading: other splits' rows never load."""
    import pyarrow.parquet as pq

    from tasks.core.schemas import conform

    table = pq.read_table(path, filters=[("split", "in", list(splits))])
    return conform(table, "judged_pairs").to_pylist()


def pair_items(pairs: list[dict], questions: dict[str, str], context: dict[str, str]) -> list[tuple[str, str, str]]:
    """(question, context, answer) per answer, chosen then rejected for each pair."""
    return [(questions[p["question_id"]], context.get(p["question_id"], ""), p[side])
            for p in pairs for side in ("chosen", "rejected")]


def _collator_class():
    from trl.trainer.reward_trainer import DataCollatorForPreference
    from trl.trainer.utils import pad

    @dataclass
    class PairCollator(DataCollatorForPreference):
        """trl's collator (chosen rows, then rejected rows) plus the segment ids of text pairs."""

        def torch_call(self, examples):
            import torch

            out = super().torch_call(examples)
            if "chosen_token_type_ids" in examples[0]:
                types = [torch.tensor(e[f"{side}_token_type_ids"]) for side in ("chosen", "rejected") for e in examples]
                out["token_type_ids"] = pad(types, padding_value=0, padding_side="right")
            return out
    return PairCollator


def train(backbone_path: str, tok, encoded: list, p: dict, seed: int, save_to: Path) -> dict:
    """Train on encoded (chosen, rejected) pairs; save model + tokenizer to `save_to`."""
    import torch
    from datasets import Dataset
    from transformers import AutoModelForSequenceClassification
    from trl import RewardConfig, RewardTrainer

    chosen, rejected = encoded[0::2], encoded[1::2]
    columns = {"chosen_ids": [e.ids for e in chosen], "rejected_ids": [e.ids for e in rejected]}
    if chosen[0].token_types is not None:
        columns |= {"chosen_token_type_ids": [e.token_types for e in chosen],
                    "rejected_token_type_ids": [e.token_types for e in rejected]}
    with tempfile.TemporaryDirectory(prefix="train_rm-") as work, deterministic(seed):
        model = AutoModelForSequenceClassification.from_pretrained(backbone_path, num_labels=1, trust_remote_code=False)
        args = RewardConfig(
            output_dir=work, num_train_epochs=p["epochs"], learning_rate=float(p["learning_rate"]),
            per_device_train_batch_size=int(p["batch_size"]), seed=seed, data_seed=seed,
            max_length=None,                 # encode_many already fits every input; trl would drop longer ones
            remove_unused_columns=False,     # keep the segment-id columns for the collator
            activation_checkpointing=False,  # trl's default trades ~20% speed for memory small backbones do not need
            save_strategy="no", report_to="none", logging_strategy="epoch", disable_tqdm=True,
            use_cpu=not torch.cuda.is_available(), dataloader_num_workers=0,
            # trl defaults to bf16, which on a CPU runs a generic bf16 gemm many times slower than fp32
            bf16=torch.cuda.is_available() and torch.cuda.is_bf16_supported())
        trainer = RewardTrainer(model=model, args=args, train_dataset=Dataset.from_dict(columns), processing_class=tok,
                                data_collator=_collator_class()(pad_token_id=tok.pad_token_id))
        result = trainer.train()
        trainer.model.save_pretrained(save_to)   # weights + config only: no optimizer state, no checkpoints
        tok.save_pretrained(save_to)
        scrub_saved(save_to)
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    return {"steps": result.global_step, "final_train_loss": round(losses[-1], 6) if losses else None,
            "mean_train_loss": round(result.training_loss, 6)}


def not_trained(out: dict) -> dict:
    """`train_rm.splits: []`: the model folder holds only a note (a bradley-terry RM entry then
    fails with a clear error), so the DAG still runs in a setting without training pairs."""
    from tasks.core.runlog import write_metrics

    target = Path(out["model"])
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    tmp.chmod(0o755)
    (tmp / "NOT_TRAINED.txt").write_text("train_rm.splits is empty in this params file: no model was trained.\n")
    replace_dir(tmp, target)
    metrics = {"trained": False, "reason": "train_rm.splits is empty", "pairs_used": 0}
    write_metrics(metrics, out["metrics"])
    return metrics


def run(params: dict, inputs: dict, out: dict) -> dict:
    from transformers import AutoTokenizer

    from tasks.core.artifacts import read_table, tree_hash

    from tasks.core.runlog import write_metrics
    from tasks.models.encoders import resolve_model

    p, seed, start = params["train_rm"], int(params["common"]["seed"]), time.perf_counter()
    check_benchmark_strategy(p["strategy"], "train_rm.strategy")
    scored = set(p["splits"]) & set((params.get("scoring") or {}).get("splits") or ())
    if scored:   # an RM trained on the pairs it is then scored on measures nothing
        raise ConfigError(f"train_rm.splits: '{sorted(scored)[0]}' is also a scored split (scoring.splits); "
                          "train on questions the benchmark does not test")
    if not p["splits"]:   # a setting with no training pairs (the released benchmark is test only)
        return not_trained(out)
    pairs = read_train_pairs(inputs["train_pairs"], p["splits"])
    if not pairs:
        raise ConfigError(f"train_rm.splits: no selected pairs in splits {p['splits']} "
                          f"of {inputs['train_pairs']}")
    questions = {q["id"]: q["question"] for q in read_table(inputs["questions"], "questions").to_pylist()}
    context = load_contexts(p["strategy"], inputs["questions"], inputs["profile_context"], inputs.get("inferred_rubrics"))
    backbone_path, backbone_id = resolve_model(p["backbone"])
    tok = AutoTokenizer.from_pretrained(backbone_path, trust_remote_code=False)
    template = getattr(tok, "chat_template", None)
    encoded = encode_many(tok, pair_items(pairs, questions, context), int(p["max_length"]), template)

    target = Path(out["model"])
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    tmp.chmod(0o755)   # mkdtemp's 0700 would lock the published folder to this user
    try:
        stats = train(backbone_path, tok, encoded, p, seed, tmp)
        # train-pair accuracy through the scorer itself: the saved folder loads and sees the same inputs
        scorer = SeqClsRM("train_rm", {"model": str(tmp), "max_length": p["max_length"], "batch_size": p["batch_size"]})
        scores = scorer.score_answers(pair_items(pairs, questions, context))
        replace_dir(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    wins = [c.score > r.score for c, r in zip(scores[0::2], scores[1::2])]
    metrics = {"pairs_used": len(pairs), "splits": list(p["splits"]), "strategy": p["strategy"],
               "empty_context_pairs": sum(not context.get(x["question_id"]) for x in pairs),
               "truncated_inputs": sum(e.truncated for e in encoded), "epochs": p["epochs"], **stats,
               "train_accuracy": round(sum(wins) / len(wins), 6), "backbone": backbone_id,
               "model_hash": tree_hash([target]), "run": {"seconds": round(time.perf_counter() - start, 1)}}
    write_metrics(metrics, out["metrics"])
    return metrics


# --- the stage as flows/stage.py runs it ------------------------------------------------------------
# no log_prints: Prefect's print-to-log would catch the disassembly dill prints into its own captured
# stdout while `datasets` fingerprints a function (bytecode lines in the log, and dill sees no globals)
STAGE_LOG_PRINTS = False


def stage_inputs(params: dict, key: None, declared: dict) -> dict:
    """Only the planner strategy reads the inferred rubrics: the others do not retrain when they change."""
    inputs = dict(declared)
    if params["train_rm"]["strategy"] != "planner":
        inputs.pop("inferred_rubrics")
    return inputs


def stage_cache_extra(params: dict, key: None) -> dict:
    """The backbone's local weights hash: new weights, new run."""
    from tasks.models.encoders import resolve_model

    return {"backbone": resolve_model(params["train_rm"]["backbone"])[1]}
