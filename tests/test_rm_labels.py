"""RM labels on the leaderboard (issue 11 items 2 and 12): an RM that shares its LLM with the
pair filter, the pair generator or the BoN judge is flagged (same `llms` entry or same backend
and model), and the train_rm stage's RM is labelled in-distribution, in the parquet, the metrics
and the text table; in each shipped params file."""
import json

import yaml

from tasks.core import layout
from tasks.stages import leaderboard
from tasks.core.artifacts import read_table, write_table
from tasks.core.rm_labels import implicit_reward, labels, shares_encoder_with, shares_llm_with
from tests.conftest import ROOT

QWEN = {"backend": "openai", "model": "Qwen/Qwen2.5-32B-Instruct"}
LB = {"tie_policy": "strict", "bootstrap": 50, "ci": 0.95, "split": "test", "heatmap_strategy": "none"}


def params(**over):
    p = {"llms": {"qwen": QWEN, "qwen-vllm2": dict(QWEN), "gem": {"backend": "gemini", "model": "gemini-2.5-flash"}},
         "scoring": {"rms": {"judge": {"kind": "judge-pairwise", "llm": "qwen"},
                             "same-model": {"kind": "judge-pointwise", "llm": "qwen-vllm2"},
                             "hub-qwen": {"kind": "seq-cls", "model": "Qwen/Qwen2.5-32B-Instruct"},
                             "other": {"kind": "seq-cls", "model": "Skywork/Skywork-Reward-Llama-3.1-8B-v0.2"},
                             "bradley-terry": {"kind": "bradley-terry"}}},
         "pairs": {"judge": {"kind": "llm", "llm": "qwen"}, "keep_invalid": True, "source": "reference", "llm": "gem"},
         "bon": {"judge": {"kind": "embedding"}}}
    for key, value in over.items():
        group, name = key.split("__")
        p[group][name] = value
    return p


def test_a_judge_that_filters_nothing_is_no_dependency():
    assert set(map(tuple, shares_llm_with(params()).values())) == {()}


def test_the_pair_filter_and_the_bon_judge_are_flagged_by_entry_or_model():
    shared = shares_llm_with(params(pairs__keep_invalid=False, bon__judge={"kind": "llm", "llm": "qwen-vllm2"}))
    assert shared == {"judge": ["bon.judge", "pairs.judge"], "same-model": ["bon.judge", "pairs.judge"],
                      "hub-qwen": ["bon.judge", "pairs.judge"], "other": [], "bradley-terry": []}
    gen = shares_llm_with(params(pairs__source="generate",
                                 scoring__rms={"g": {"kind": "judge-pairwise", "llm": "gem"}}))
    assert gen == {"g": ["pairs.llm"]}, "the model that wrote the scored pairs"


def _scores(rm, kind):
    return [{"rm": rm, "benchmark": "personalised", "rm_kind": kind, "rm_identity": rm, "strategy": "none",
             "question_id": f"q{i}", "domain": "Art", "split": "test", "score_chosen": float(i % 3 > 0),
             "score_rejected": 0.5, "correct": i % 3 > 0, "tie": False, "invalid": False, "truncated": False,
             "order_consistent": None, "input_hash_chosen": "h", "input_hash_rejected": "h"} for i in range(6)]


def test_the_leaderboard_carries_the_labels(tmp_path):
    p = {**params(bon__judge={"kind": "llm", "llm": "qwen"}), "common": {"seed": 1}, "leaderboard": LB}
    inputs = {rm: str(write_table(_scores(rm, e["kind"]), tmp_path / f"{rm}.parquet", "scores"))
              for rm, e in p["scoring"]["rms"].items()}
    out = {k: str(tmp_path / v) for k, v in layout.LEADERBOARD.items()}
    metrics = leaderboard.run(p, inputs, out)
    rows = read_table(out["leaderboard"], "leaderboard").to_pylist()
    micro = {r["rm"]: r for r in rows if r["domain"] == "micro"}
    assert micro["judge"]["shares_llm_with"] == "bon.judge" and micro["other"]["shares_llm_with"] == ""
    assert micro["bradley-terry"]["in_distribution"] and not micro["other"]["in_distribution"]
    assert metrics["labels"]["judge"] == {"shares_llm_with": ["bon.judge"], "shares_encoder_with": [],
                                          "in_distribution": False, "implicit_reward": ""}
    assert json.loads((tmp_path / layout.LEADERBOARD["metrics"]).read_text())["labels"]["bradley-terry"][
        "in_distribution"] is True
    table = leaderboard.format_table(rows)
    assert "bradley-terry [in-distribution]" in table and "judge [shares LLM with bon.judge]" in table


def _load(name):
    return yaml.safe_load((ROOT / name).read_text())


def test_shipped_settings_flag_what_they_should():
    default = {rm: v["shares_llm_with"] for rm, v in labels(_load("params.yaml")).items() if v["shares_llm_with"]}
    assert default == {"smollm2-pairwise": "generic_pairs.llm"}, \
        "SmolLM2 wrote the generic benchmark's rejected answers"
    assert labels(_load("params.yaml"))["bradley-terry"]["in_distribution"]
    paper = {rm: v["shares_llm_with"] for rm, v in labels(_load("params-paper.yaml")).items() if v["shares_llm_with"]}
    assert paper == {"qwen32b-pairwise": "bon.judge"}, "the released pairs are not filtered by the 32B judge"
    encoders = {rm: v["shares_encoder_with"] for rm, v in labels(_load("params.yaml")).items() if v["shares_encoder_with"]}
    assert encoders == {"similarity": "bon.judge"}, "the similarity RM embeds with the embedding judge's MiniLM"
    regen = labels(_load("params-regenerate.yaml"))
    assert regen["qwen32b-pairwise"]["shares_llm_with"] == "bon.judge, pairs.judge"
    assert regen["bradley-terry"]["in_distribution"]


def test_one_model_across_backends_is_one_llm():
    """The BoN judge on vLLM and an RM on the same weights in transformers or as a GGUF share an LLM."""
    llms = {"judge-vllm": QWEN, "local-hf": {"backend": "transformers", "model": "Qwen/Qwen2.5-32B-Instruct"},
            "gguf": {"backend": "llamacpp", "model": "/models/qwen2.5-32b-instruct-q4_k_m.gguf"},
            "small": {"backend": "transformers", "model": "Qwen/Qwen2.5-0.5B-Instruct"}}
    p = {"llms": llms, "pairs": {"judge": {"kind": "embedding"}, "source": "reference"},
         "bon": {"judge": {"kind": "llm", "llm": "judge-vllm"}},
         "scoring": {"rms": {"hf": {"kind": "judge-pointwise", "llm": "local-hf"},
                             "gguf": {"kind": "judge-pairwise", "llm": "gguf"},
                             "small": {"kind": "judge-pointwise", "llm": "small"},
                             "hub-awq": {"kind": "seq-cls", "model": "someone/Qwen2.5-32B-Instruct-AWQ"}}}}
    assert shares_llm_with(p) == {"hf": ["bon.judge"], "gguf": ["bon.judge"], "small": [], "hub-awq": ["bon.judge"]}


def test_the_generic_benchmarks_writer_is_a_judge_too():
    p = params(scoring__rms={"g": {"kind": "judge-pairwise", "llm": "gem"}, "other": {"kind": "random"}})
    p["generic_pairs"] = {"mode": "generate", "llm": "gem"}
    assert shares_llm_with(p) == {"g": ["generic_pairs.llm"], "other": []}
    p["scoring"]["benchmarks"] = ["personalised"]   # the generic benchmark is not scored: nothing it wrote counts
    assert shares_llm_with(p) == {"g": [], "other": []}
    p["scoring"]["benchmarks"] = ["personalised", "generic"]
    p["generic_pairs"]["mode"] = "degraded"         # another user's chosen answer: no LLM wrote it
    assert shares_llm_with(p) == {"g": [], "other": []}


def test_an_rm_on_the_embedding_judges_encoder_is_flagged():
    """The same encoder under another spelling is one encoder; an RM on another encoder, or a judge that filters
    nothing, is no dependency."""
    p = params(scoring__rms={"sim": {"kind": "similarity"}, "sim-hf": {"kind": "similarity",
                                                                         "encoder": "sentence-transformers/all-MiniLM-L6-v2"},
                             "contriever": {"kind": "similarity", "encoder": "facebook/contriever-msmarco"},
                             "other": {"kind": "random"}})
    assert shares_encoder_with(p) == {"sim": ["bon.judge"], "sim-hf": ["bon.judge"], "contriever": [], "other": []}
    p["pairs"].update(judge={"kind": "embedding", "encoder": "facebook/contriever-msmarco"}, keep_invalid=False)
    assert shares_encoder_with(p)["contriever"] == ["pairs.judge"], "the pair filter is a judge too"
    p["bon"]["judge"] = {"kind": "llm", "llm": "qwen"}
    assert shares_encoder_with(p)["sim"] == [], "an LLM judge shares no encoder"


def test_a_dpo_rm_is_labelled_an_implicit_reward_with_its_reference(tmp_path):
    """Its numbers are log-probability ratios against a reference (or a bare log-probability): the board says which,
    in the parquet, the metrics and the text table; every other kind carries ''."""
    rms = {"zephyr": {"kind": "dpo", "model": "org/zephyr-dpo", "ref_model": "org/zephyr-sft"},
           "simpo": {"kind": "dpo", "model": "org/simpo", "normalize": "mean"}, "hub": {"kind": "seq-cls", "model": "m"}}
    assert {rm: implicit_reward(e) for rm, e in rms.items()} == {
        "zephyr": "DPO vs org/zephyr-sft", "simpo": "DPO, reference-free, mean per token", "hub": ""}
    p = {**params(scoring__rms=rms), "common": {"seed": 1}, "leaderboard": LB}
    inputs = {rm: str(write_table(_scores(rm, e["kind"]), tmp_path / f"{rm}.parquet", "scores")) for rm, e in rms.items()}
    out = {k: str(tmp_path / v) for k, v in layout.LEADERBOARD.items()}
    metrics = leaderboard.run(p, inputs, out)
    micro = {r["rm"]: r for r in read_table(out["leaderboard"], "leaderboard").to_pylist() if r["domain"] == "micro"}
    assert {rm: r["implicit_reward"] for rm, r in micro.items()} == {
        "zephyr": "DPO vs org/zephyr-sft", "simpo": "DPO, reference-free, mean per token", "hub": ""}
    assert metrics["labels"]["zephyr"]["implicit_reward"] == "DPO vs org/zephyr-sft"
    table = leaderboard.format_table(list(micro.values()))
    assert "zephyr [implicit reward: DPO vs org/zephyr-sft]" in table and "\nhub " in table
    from tasks.ops.report import board

    rows = read_table(out["leaderboard"], "leaderboard")
    page = board.leaderboard(rows.to_pylist(), rows.column_names, metrics)
    names = {r["rm"]: r["cells"][0]["text"] for r in page["rows"]}
    assert names == {"zephyr": "zephyr (implicit reward)", "simpo": "simpo (implicit reward)", "hub": "hub"}
    column = [h["key"] for h in page["head"]].index("implicit_reward")
    assert {r["rm"]: r["cells"][column]["text"] for r in page["rows"]}["zephyr"] == "DPO vs org/zephyr-sft"
