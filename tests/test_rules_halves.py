"""docs/statistics.md#split-half-questions: Best-of-N sampling and RL evaluation answer the downstream half of
each domain's test questions only, never a question the benchmark half scores; `pairs` selects the benchmark
half. Each stage is run on a small project whose halves are split (half of each domain downstream), and what
it wrote is held against ingest's halves table."""
import pyarrow.parquet as pq
import pytest

from tasks.core import halves, layout
from tasks.core.artifacts import write_table
from tests.conftest import ROOT
from tests.stage_project import make_project, save_params


def _halves(path) -> dict:
    return halves.read(str(path))


def test_bon_samples_the_downstream_half_only(tmp_path):
    from tasks.downstream import bon
    from tasks.downstream.bon import sample
    from tests.test_bon_stage import BON

    params = make_project(tmp_path, configs=("Lifestyle_and_Personal_Development", "Art_and_Entertainment"), limit=4)
    params["bon"] = {**BON, "questions_limit": None, "n": 1}
    save_params(tmp_path, params)
    inputs = {"questions": str(tmp_path / layout.INGEST["questions"]), "halves": str(tmp_path / layout.INGEST["halves"]),
              "ranked_profile": str(tmp_path / layout.PROFILES["ranked_profile"])}
    out = {k: str(tmp_path / v) for k, v in bon.SAMPLE.items()}
    sample.run(params, inputs, out)
    half = _halves(inputs["halves"])
    asked = {r["question_id"] for r in pq.read_table(out["samples"]).to_pylist()}
    assert asked == {q for q, h in half.items() if h == halves.DOWNSTREAM}, "every downstream question, nothing else"
    assert len(asked) == 4 and not asked & {q for q, h in half.items() if h == halves.BENCHMARK}


@pytest.fixture(scope="module")
def tiny_policy(tmp_path_factory):
    from tasks.core.artifacts import read_table
    from tasks.downstream.bon.sample import policy_prompts
    from tests.test_rl import build_tiny_policy, rl_params, toy_project

    root = tmp_path_factory.mktemp("toy")
    inputs = toy_project(root, n_test=6)
    qs = read_table(inputs["questions"], "questions").to_pylist()
    prompts = policy_prompts(qs, read_table(inputs["ranked_profile"], "ranked_profile").to_pylist(),
                             rl_params("unused")["rl"])
    return build_tiny_policy(root / "tiny-policy", [m[0]["content"] for m in prompts])


def test_rl_evaluation_answers_the_downstream_half_only(tmp_path, tiny_policy):
    from tasks.core.artifacts import read_table
    from tasks.downstream.rl import evaluate
    from tests.test_rl import rl_params, toy_project

    inputs = toy_project(tmp_path, n_test=6)
    qs = read_table(inputs["questions"], "questions").to_pylist()
    write_table(halves.assign(qs, 0.5, 7), inputs["halves"], "halves")   # 3 of the 6 test questions downstream
    params = rl_params(str(tiny_policy))
    params["common"]["cache_dir"] = str(tmp_path / "cache")
    out = {k: str(tmp_path / v) for k, v in layout.RL_EVAL.items()}
    evaluate.run(params, {"questions": inputs["questions"], "ranked_profile": inputs["ranked_profile"],
                          "halves": inputs["halves"], "policies": {}}, out)
    half = _halves(inputs["halves"])
    answered = {r["question_id"] for r in pq.read_table(out["answers"]).to_pylist()}
    assert answered == {q for q, h in half.items() if h == halves.DOWNSTREAM} and len(answered) == 3


def test_pairs_select_the_benchmark_half_only(tmp_path):
    from tasks.stages import pairs

    params = make_project(tmp_path, configs=("Lifestyle_and_Personal_Development",), limit=4)
    half = _halves(tmp_path / layout.INGEST["halves"])
    assert sorted(half.values()) == [halves.BENCHMARK] * 2 + [halves.DOWNSTREAM] * 2
    out = {k: str(tmp_path / v) for k, v in layout.PAIRS.items()}
    from tasks.core import stage_table as stages

    inputs = {name: str(tmp_path / path) for name, path in stages.STAGES["pairs"].inputs.items()}
    pairs.run(params, inputs, out)
    selected = {r["question_id"] for r in pq.read_table(out["selected_pairs"]).to_pylist()}
    assert selected and selected <= {q for q, h in half.items() if h == halves.BENCHMARK}
