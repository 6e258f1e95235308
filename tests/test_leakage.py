"""The paper's central comparison holds only if no gold field reaches what a non-oracle strategy
shows: unique markers are planted in the gold rubric (aspect, evidence, reason) and the narrative of
ingested rows, and none may reach a retrieval query (bm25 or dense), the planner's prompt, a
`none` / `raw_profile` / `planner` context, an RM's input (pairwise and pointwise judges, the
trained RM's items, BoN's and RL's scoring) or the policy's prompt (BoN and RL). The oracle context
must carry the gold aspects, so a marker that never gets anywhere cannot pass the test."""
import dataclasses
import re

import pytest

from tasks.stages import ingest, profiles, rubrics
from tasks.core import layout
from tasks.core.artifacts import read_table, write_table
from tasks.downstream.bon.sample import pick_questions, policy_prompts
from tasks.models.llm import LLM, CallCache
from tasks.models.llm.backends.dummy import DummyBackend
from tasks.models.rms.registry import make_rm
from tasks.models.strategies import STRATEGIES, load_contexts, pair_inputs
from tests.conftest import ROOT, ingest_params, make_row, write_json_rows
from tests.stage_project import project_params
from tests.test_rms import Res

MARK = re.compile(r"zq[a-z]+mark\d+")   # every planted marker; nothing else in the data matches
NON_ORACLE = [s for s in STRATEGIES if s != "oracle"]
# words of the narrative that occur in one post only (the last one): a query holding the narrative ranks it first
NARRATIVE_WORDS = "kayak paddle river"


def marked_row(i: int, prefix: str) -> dict:
    row = make_row(i, prefix=prefix, question=f"How should I plan question {prefix}/{i} on a small budget?")
    row["rubric_aspects"] = [{"aspect": f"Keep it zqaspectmark{i}{k}", "evidence": f"zqevidencemark{i}{k}",
                              "reason": f"zqreasonmark{i}{k}"} for k in range(3)]
    row["narrative"] = f"I want {NARRATIVE_WORDS} tips, zqnarrativemark{i}."
    row["profile"][-1]["text"] = f"Sold my {NARRATIVE_WORDS} gear last spring."
    return row


def markers(text: str) -> set[str]:
    return set(MARK.findall(text))


class RecordingBackend(DummyBackend):
    """The dummy backend, keeping every prompt it was sent. Its replies are "- " items made of the
    prompt's own lines, so the planner parses them and a leaked marker would travel on."""

    def __init__(self):
        super().__init__()
        self.prompts: list[str] = []

    def generate(self, messages, params, sample_index):
        self.prompts.append(messages[-1]["content"])
        c = super().generate(messages, params, sample_index)
        lines = [" ".join(line.split()[:8]) for line in messages[-1]["content"].splitlines() if line.strip()]
        return dataclasses.replace(c, text="\n".join(f"- {line}" for line in lines[:4]))

    def choice_logprobs(self, messages, choices):
        self.prompts.append(messages[-1]["content"])
        return super().choice_logprobs(messages, choices)


class RecordingEncoder:
    """The real MiniLM encoder, keeping every text it was asked to encode."""

    def __init__(self, encoder):
        self.encoder, self.texts = encoder, []

    def encode(self, texts, progress=False):
        self.texts += list(texts)
        return self.encoder.encode(texts, progress=progress)


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """Marked rows ingested (train and test, two domains), profiles ranked by bm25, the planner run."""
    root = tmp_path_factory.mktemp("leakage")
    for config, prefix in (("Lifestyle_and_Personal_Development", "2_0"), ("Art_and_Entertainment", "1_0")):
        for split, start in (("train", 0), ("test", 3)):
            write_json_rows(root / "data" / f"{config}_{split}.json",
                            [marked_row(i, prefix) for i in range(start, start + 3)])
    (root / "p").mkdir()
    params = project_params(root / "p", limit=None)
    res = ingest.ingest(ingest.resolve_sources(ingest_params(root / "data")))
    out = {k: str(root / v) for k, v in {**layout.INGEST, **layout.PROFILES}.items()}
    for name in ("questions", "profiles"):
        write_table(getattr(res, name), out[name], name)
    profiles.run({**params["profiles"], "k": 6, "context_k": 4}, params["common"],
                 {"questions": out["questions"], "profiles": out["profiles"]},
                 {k: out[k] for k in layout.PROFILES})
    backend = RecordingBackend()
    questions = read_table(out["questions"], "questions").to_pylist()
    ranked = read_table(out["ranked_profile"], "ranked_profile").to_pylist()
    rows = rubrics.plan(questions, ranked, LLM(backend, CallCache(root / "calls.sqlite")), params["rubrics"], 1)
    out["inferred_rubrics"] = str(write_table(rows, root / "inferred.parquet", "inferred_rubrics"))
    return {"root": root, "out": out, "params": params, "questions": questions, "ranked": ranked,
            "planner_prompts": list(backend.prompts), "inferred": rows}


def test_the_fixture_carries_every_marker_into_the_ingested_questions(project):
    gold = {q["id"]: markers(str(q["rubric_aspects"]) + q["narrative"]) for q in project["questions"]}
    assert len(gold) == 12 and all(len(m) == 10 for m in gold.values()), gold


def test_bm25_query_is_the_question_alone(project, monkeypatch):
    seen = []
    from tasks.models import retrieval

    real = retrieval.bm25_scores
    monkeypatch.setattr(retrieval, "bm25_scores", lambda query, texts: seen.append(query) or real(query, texts))
    qs, profs = project["questions"], read_table(project["out"]["profiles"], "profiles").to_pylist()
    ranked, contexts = profiles.rank_profiles(qs, profs, retriever="bm25", k=6, max_words_per_post=60)
    assert seen == [q["question"] for q in qs]
    blind, _ = profiles.rank_profiles([dict(q, narrative="") for q in qs], profs, retriever="bm25", k=6,
                                      max_words_per_post=60)
    assert ranked == blind, "the narrative changed the bm25 ranking"
    assert not any(NARRATIVE_WORDS in c["profile_text"] for c in contexts), \
        "the one post matching the narrative stays out of the top posts"
    assert not set().union(*(markers(c["profile_text"]) for c in contexts))


def test_dense_query_is_the_question_alone(project):
    from tasks.models.encoders import Encoder

    enc = RecordingEncoder(Encoder("embedded:all-MiniLM-L6-v2"))
    qs = project["questions"][:2]   # two users are enough: encoding every post is the cost here
    profs = [p for p in read_table(project["out"]["profiles"], "profiles").to_pylist()
             if p["question_id"] in {q["id"] for q in qs}]
    profiles.rank_profiles(qs, profs, retriever="dense", k=6, max_words_per_post=60, encoder=enc)
    posts = {p["text"] for p in profs}
    queries = [t for t in enc.texts if t not in posts]
    assert queries == [q["question"] for q in qs]


def test_planner_prompts_and_plans_hold_no_gold_field(project):
    prompts = project["planner_prompts"]
    assert len(prompts) == 12 and all(q["question"] in p for q, p in zip(project["questions"], prompts))
    assert not set().union(*map(markers, prompts))
    assert all(r["valid"] for r in project["inferred"]), "the planner's replies parsed, so its contexts are not empty"


@pytest.mark.parametrize("strategy", STRATEGIES.names())
def test_only_the_oracle_context_holds_gold_aspects_and_none_the_narrative_or_evidence(project, strategy):
    out = project["out"]
    ctx = load_contexts(strategy, out["questions"], out["profile_context"], out["inferred_rubrics"])
    qs = {q["id"]: q for q in project["questions"]}
    for qid, text in ctx.items():
        found = markers(text)
        if strategy == "oracle":
            assert found == {f"zqaspectmark{qid.rsplit('_', 1)[1]}{k}" for k in range(3)}, (qid, text)
        else:
            assert not found, (strategy, qid, text)
        assert qs[qid]["narrative"] not in text
    if strategy != "none":
        assert all(ctx.values()), "every context is filled, so an empty one cannot pass for a clean one"


def _pairs(questions):
    return [{"question_id": q["id"], "chosen": f"Chosen answer for {q['id']}.", "rejected": "A generic answer."}
            for q in questions]


@pytest.mark.parametrize("kind", ["judge-pairwise", "judge-pointwise"])
def test_rm_inputs_of_every_non_oracle_strategy_hold_no_gold_field(project, kind):
    """What an RM is shown, rendered: the score stage's pairs, the trained RM's items, BoN's candidates
    and RL's rollouts all go through load_contexts and the same RewardModel calls."""
    from tasks.downstream.rl.reward import RMReward
    from tasks.stages.train_rm import pair_items

    out, test = project["out"], [q for q in project["questions"] if q["split"] == "test"]
    qs = {q["id"]: q for q in project["questions"]}
    for strategy in STRATEGIES:
        backend = RecordingBackend()
        rm = make_rm("judge", {"kind": kind, "llm": "x"}, Res(LLM(backend, CallCache(project["root"] / f"{kind}.sqlite"))))
        ctx = load_contexts(strategy, out["questions"], out["profile_context"], out["inferred_rubrics"])
        rm.score_pairs(pair_inputs(_pairs(test), qs, ctx))
        items = pair_items(_pairs(project["questions"]), {q: v["question"] for q, v in qs.items()}, ctx)
        items += RMReward(rm, {q: v["question"] for q, v in qs.items()}, ctx, 0).items([q["id"] for q in test],
                                                                                     ["an rl rollout"] * len(test))
        if kind == "judge-pointwise":
            rm.score_answers(items)
        seen = set().union(*map(markers, backend.prompts), *(markers(" ".join(i)) for i in items))
        assert backend.prompts and all(any(q["question"] in p for p in backend.prompts) for q in test)
        if strategy == "oracle":
            assert seen and all(m.startswith("zqaspectmark") for m in seen), seen
        else:
            assert not seen, (strategy, sorted(seen)[:5])


def test_policy_prompts_of_bon_and_rl_hold_no_gold_field(project):
    import yaml

    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    for section in (params["bon"], params["rl"]):   # rl_train and rl_eval both prompt with rl's fields
        p = {**section, "prompt": str(ROOT / section["prompt"]), "splits": ["train", "test"], "domains": None,
             "questions_limit": None}
        questions = pick_questions(project["questions"], p)
        prompts = [m[-1]["content"] for m in policy_prompts(questions, project["ranked"], p)]
        assert len(prompts) == 12 and all(q["question"] in t for q, t in zip(questions, prompts))
        assert not set().union(*map(markers, prompts))
        assert not any(q["narrative"] in t or NARRATIVE_WORDS in t for q, t in zip(questions, prompts))
