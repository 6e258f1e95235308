"""A param change reruns only the stages that read it: DVC compares each stage's declared params
(dvc.yaml, generated from the stage table), so the declarations decide. Read here as DVC reads them:
a declared key covers the keys under it, foreach stages once per entry of the shipped params.
(tests/test_dvc_deps.py checks the same with `dvc status` on recorded stages.)"""
import pytest
import yaml

from tasks.core import stage_table as stages
from tests.conftest import ROOT

SHIPPED = yaml.safe_load((ROOT / "params.yaml").read_text())
RMS = sorted(SHIPPED["scoring"]["rms"])
RL_RMS = sorted(SHIPPED["rl"]["rms"])
BENCHES = sorted(SHIPPED["benchmarks"])


def _declared() -> dict[str, list[str]]:
    """stage (name@key for a foreach) -> its params keys in dvc.yaml. A fingerprinted stage (one dep: its RM's
    file of `<name>_inputs`, which holds its params) reads what that stage declares, its own RM's entry of it."""
    out = {}
    specs = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    for name, body in specs.items():
        if "foreach" not in body:
            out[name] = body.get("params") or []
            continue
        group = body["foreach"][2:-1]
        entries = SHIPPED
        for part in group.split("."):
            entries = entries[part]
        for key in sorted(entries):
            out[f"{name}@{key}"] = [p.replace("${key}", key).replace("${item}", key) for p in body["do"].get("params") or []]
            if stages.STAGES[name].fingerprint:
                out[f"{name}@{key}"] = [f"{p}.{key}" if p == group else p for p in specs[f"{name}_inputs"]["params"]]
    return out


def reading(key: str) -> set[str]:
    """The stages whose declared params cover `key` (or a key under it)."""
    return {s for s, keys in _declared().items()
            if any(key == k or key.startswith(k + ".") or k.startswith(key + ".") for k in keys)}


def each(stage: str, names) -> set[str]:
    return {f"{stage}@{n}" for n in names}


@pytest.mark.parametrize("key, expected", [
    ("bon.bootstrap", {"bon_report"}),                   # a resampling count: never resamples the answers
    ("bon.n", {"bon_sample", "correlation"}),   # correlation: the primary test's design (its power)
    ("bon.strategy", each("bon_score", RMS) | {"bon_score_inputs"}),   # *_inputs: its RMs' fingerprints
    ("rl.eval.questions_limit", {"rl_eval"}),            # the eval budget never retrains
    ("rl.train.updates", each("rl_train", RL_RMS)),       # only the RMs RL trains have the stage
    ("scoring.per_domain_limit", each("score", RMS) | {"score_inputs"}),
    ("ingest.downstream_share", {"ingest"}),             # then only the readers of the halves, by content
    ("train_rm.epochs", {"train_rm"}),
    ("correlation.bootstrap", {"correlation"}),
    ("leaderboard.bootstrap", {"leaderboard", "explain"} | each("bench_score", BENCHES)),
    ("leaderboard.heatmap_strategy", {"leaderboard"}),   # the page's choice: the error analysis never reads it
    ("explain.min_n", {"explain"}),
    ("rl.rms", {"rl_eval"}),                             # a name more: its own rl_train@<it>, no other trains
    # an RM RL does not train: RL's evaluation reads only the policies rl.rms trained (a hundred RMs added, no rerun)
    ("scoring.rms.random", {"score_inputs", "score@random", "bon_score_inputs", "bon_score@random", "leaderboard",
                            "explain", "bon_report", "correlation"} | each("bench_score", BENCHES)),
])
def test_a_param_reruns_only_its_readers_and_the_report(key, expected):
    assert reading(key) == expected | {"report"}


def test_a_stage_declares_a_whole_group_only_of_its_own():
    """A whole group of another stage (a key with no dot) would rerun the stage for every key of it;
    `common` (cache, seed, threads) and `llms` (entries are picked by name at run time) are the exceptions."""
    shared = {"common", "llms"}
    for name, keys in _declared().items():
        stage = name.partition("@")[0]
        if stage == "report":   # the page lists every param that differs from the shipped files
            continue
        wide = [k for k in keys if "." not in k and k not in shared | {stage}]
        assert wide == [], f"{name} declares whole groups {wide}: name the keys it reads"
    assert set(stages.STAGES["report"].params) >= set(SHIPPED) - set(stages.NOT_ON_THE_PAGE)
