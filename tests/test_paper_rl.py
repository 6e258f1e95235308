"""The paper's PPO, reduced: params-paper.yaml with local files standing in for both of its sources (the
released benchmark's test pairs, and LaMP-QA's train questions read as RL prompts only), a tiny random
policy, and the release's knobs: PPO per domain, mini-batches, a constant LR, evaluation with its own
profile_k and sampling. The train rows' narrative and rubric never reach a prompt, a table or a policy."""
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from tasks.core import layout
from tests.conftest import ROOT
from tests.test_rl import build_tiny_policy

SAMPLE = ROOT / "data" / "sample"


def paper_params(tmp: Path, policy: str) -> dict:
    params = yaml.safe_load((ROOT / "params-paper.yaml").read_text())
    params["common"].update(cache_dir=str(tmp / "cache"), torch_threads=2)
    params["ingest"].update(source="files", path=str(SAMPLE / "rewardbench"),
                            limit_per_split=2)   # a test question per half
    params["ingest"]["rl_prompts"].update(source="files", path=str(SAMPLE / "lamp_qa"), limit_per_split=4)
    params["profiles"].update(retriever="bm25")
    params["scoring"]["rms"] = {"length-longer": {"kind": "length-longer"}}
    params["bon"]["judge"] = {"kind": "embedding", "encoder": "embedded:all-MiniLM-L6-v2", "partly": 0.35, "well": 0.5}
    rl = params["rl"]
    rl.update(rms=["length-longer"], policy={"model": policy, "revision": None}, prompt=str(ROOT / rl["prompt"]))
    # the release's knobs at toy size: batch 4 in mini-batches of 2 (as 128 in 16), 1 update per domain
    rl["train"].update(batch_size=4, mini_batch_size=2, micro_batch_size=1, updates=1, response_length=6)
    rl["eval"].update(max_tokens=6, bootstrap=100)
    return params


@pytest.fixture(scope="module")
def sample_policy(tmp_path_factory) -> Path:
    """The tiny random policy, its vocabulary covering the sample's text and the policy prompt."""
    paper = yaml.safe_load((ROOT / "params-paper.yaml").read_text())["rl"]   # fidelity release: its prompt, system message
    texts = [(ROOT / "prompts" / "bon_policy.txt").read_text(), (ROOT / paper["prompt"]).read_text(),
             paper.get("system_prompt") or "", "Post (Category: ):",   # the release's post layout
             "… [ ] " + " ".join(map(str, range(20)))]
    for path in sorted((SAMPLE / "lamp_qa").glob("*.json")):
        texts += [f'"{r["question"]}" ' + " ".join(f"({p['category']}) {p['text']}" for p in r["profile"])
                  for r in json.loads(path.read_text())]
    for path in sorted((SAMPLE / "rewardbench").rglob("*.parquet")):
        texts += [f'"{r["question"]}" ' + " ".join(p["text"] for p in r["profile"]) for r in pq.read_table(path).to_pylist()]
    return build_tiny_policy(tmp_path_factory.mktemp("sample") / "tiny-policy", texts)


def test_the_paper_settings_express_the_release_ppo():
    from tasks.downstream.correlation.stage import check_params
    from tasks.stages.ingest import prompt_sources
    from tasks.downstream.rl import EVAL_PARAMS, TRAIN_PARAMS, rl_params, trainers

    params = yaml.safe_load((ROOT / "params-paper.yaml").read_text())
    rl = rl_params(params, TRAIN_PARAMS)
    hub = {rm for rm, e in params["scoring"]["rms"].items() if e["kind"] in ("seq-cls", "internlm2-reward")}
    assert rl["algorithm"] == "ppo" and set(params["rl"]["rms"]) == hub, "PPO for every hub RM"
    t = rl["train"]
    assert (t["actor_lr"], t["critic_lr"], t["batch_size"], t["epochs"], t["lr_schedule"], t["per_domain"]) == \
        (5e-7, 5e-6, 128, 1, "constant", True)
    assert trainers.sizes(t) == (4, 16, 128), "8 optimizer steps per batch of 128, as verl's mini-batch 16"
    e = rl_params(params, EVAL_PARAMS)["eval"]
    assert (e["profile_k"], e["temperature"]) == (5, 1.0) and rl["profile_k"] == 10
    sources, _ = prompt_sources(params["ingest"])
    assert [(s.hub_id, s.split) for s in sources] == [("alireza7/LaMP-QA", "train")] * 3
    assert params["ingest"]["splits"] == ["test"] and "rl" in check_params(params["correlation"])["downstream"]


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_reduced_paper_rl_runs_end_to_end_on_local_stand_ins(tmp_path, sample_policy):
    from tasks.stages import ingest, profiles
    from tasks.downstream.rl import evaluate, train

    params = paper_params(tmp_path, str(sample_policy))
    o = lambda d: {k: str(tmp_path / v) for k, v in d.items()}  # noqa: E731
    ingest.run(params["ingest"], o(layout.INGEST), params["common"]["seed"])
    profiles.run(params["profiles"], params["common"], {"questions": o(layout.INGEST)["questions"],
                                                        "profiles": o(layout.INGEST)["profiles"]}, o(layout.PROFILES))
    questions = pq.read_table(o(layout.INGEST)["questions"]).to_pylist()
    train_rows = [q for q in questions if q["split"] == "train"]
    assert {q["split"] for q in questions} == {"train", "test"} and len(train_rows) == 3 * 4
    assert all(q["narrative"] == "" and q["rubric_aspects"] == [] for q in train_rows)
    assert {r["split"] for r in pq.read_table(o(layout.INGEST)["pairs"]).to_pylist()} == {"test"}, "no train pairs"
    ingested = json.loads(Path(o(layout.INGEST)["metrics"]).read_text())
    assert ingested["rl_prompt_questions"] == 12 and {f["role"] for f in ingested["files"]} == {"benchmark", "rl_prompts"}

    inputs = {"questions": o(layout.INGEST)["questions"], "halves": o(layout.INGEST)["halves"], "ranked_profile": o(layout.PROFILES)["ranked_profile"],
              "profile_context": o(layout.PROFILES)["profile_context"],
              "inferred_rubrics": o(layout.RUBRICS)["inferred_rubrics"]}
    m = train.run(params, "length-longer", inputs, o(layout.rl_train("length-longer")))
    domains = sorted({q["domain"] for q in train_rows})
    assert m["algorithm"] == "ppo" and m["per_domain"] and sorted(m["domains"]) == domains
    seeds = m["seeds"]
    assert seeds == [params["common"]["seed"], params["common"]["seed"] + 1], "the paper setting trains 2 seeds"
    assert m["updates"] == 2 * len(domains) and m["optimizer_steps"] == 2 * 2 * len(domains), "2 mini-batches per update"
    assert all(lr == {"first": 5e-7, "last": 5e-7} for lr in m["learning_rate"].values()), "constant LR"
    policy = Path(o(layout.rl_train("length-longer"))["policy"])

    eval_params = {**params, "rl": {**params["rl"], "eval": {**params["rl"]["eval"], "questions_limit": None}}}
    from tasks.core.artifacts import write_table
    from tasks.core.errors import ConfigError

    test = next(q for q in questions if q["split"] == "test")
    write_table([*questions, {**test, "id": "x", "domain": "Elsewhere"}], tmp_path / "q.parquet", "questions")
    with pytest.raises(ConfigError, match="has no policy for domain 'Elsewhere'"):   # no train questions there
        evaluate.run(eval_params, {"questions": str(tmp_path / "q.parquet"), "ranked_profile": inputs["ranked_profile"],
                                   "halves": inputs["halves"],
                                   "policies": {"length-longer": str(policy)}}, o(layout.RL_EVAL))
    assert not Path(o(layout.RL_EVAL)["eval"]).exists(), "refused before any answer"
    em = evaluate.run(eval_params, {"questions": inputs["questions"], "ranked_profile": inputs["ranked_profile"],
                                    "halves": inputs["halves"],
                                    "policies": {"length-longer": str(policy)}}, o(layout.RL_EVAL))
    assert em["decoding"] == "sampled, temperature 1.0"
    assert {f"llm:length-longer:{d}" + s for d in domains for s in ("", f"@seed{seeds[1]}")} <= set(em["run"])
    assert em["policies"]["length-longer"]["seeds"] == 2 and em["policies"]["length-longer"]["seed_sd"] is not None
    answers = pq.read_table(o(layout.RL_EVAL)["answers"]).to_pylist()
    n_test = sum(q["split"] == "test" for q in questions) // 2   # the downstream half
    assert {a["split"] for a in answers} == {"test"} and len(answers) == (1 + len(seeds)) * n_test   # baseline + seeds

    train_files = sorted((SAMPLE / "lamp_qa").glob("*_train.json"))
    raw = [r for p in train_files for r in json.loads(p.read_text())[:4]]
    secrets = [r["narrative"][:40] for r in raw] + [a["evidence"] for r in raw for a in r["rubric_aspects"]]
    for path in (p for p in tmp_path.rglob("*") if p.is_file() and "cache" not in p.parts):
        if path.suffix == ".parquet":
            text = json.dumps(pq.read_table(path).to_pylist(), default=str, ensure_ascii=False)
        elif path.suffix in (".json", ".csv"):
            text = path.read_text()
        else:
            continue
        assert not [x for x in secrets if x in text], f"{path}: a train row's narrative or rubric"


def test_a_split_read_from_both_sources_is_refused(tmp_path):
    from tasks.core.errors import ConfigError
    from tasks.stages.ingest import prompt_sources

    p = paper_params(tmp_path, "unused")["ingest"]
    with pytest.raises(ConfigError, match="ingest.rl_prompts.splits: 'test' is also in ingest.splits"):
        prompt_sources({**p, "rl_prompts": {**p["rl_prompts"], "splits": ["train", "test"]}})
    with pytest.raises(ConfigError, match="ingest.rl_prompts.path: '.*nowhere' does not exist"):
        prompt_sources({**p, "rl_prompts": {**p["rl_prompts"], "path": str(tmp_path / "nowhere")}})
