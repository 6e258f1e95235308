"""What the stages build from a params file, built cheaply: the fuzz's proof that params the check accepted are
usable (tests/test_fuzz_params.py). Every stage's declared params and deps resolve for every key it fans out
over; every RM is constructed as its stage constructs it (make_rm), the weight-loading kinds up to the load;
every LLM entry's backend takes its options (the dummy one is built), a GGUF resolves; both rubric judges are
built; each registry name resolves; each encoder and policy resolves to a path or a hub id; each prompt file
reads. Anything it raises is a param the check let through that a stage would have failed on."""
from __future__ import annotations

import inspect
from pathlib import Path


class StubLLM:
    def __init__(self, name: str, entry: dict):
        self.name, self.entry = name, entry


class StubEncoder:
    def __init__(self, name: str):
        from tasks.models.encoders import resolve_model

        self.path, self.identity = resolve_model(name)


class StubResources:
    """tasks.models.resources.Resources without loading: an LLM name must be under `llms`, an encoder resolve."""

    def __init__(self, params: dict):
        self.params, self.cache_dir = params, Path(params["common"]["cache_dir"])

    @property
    def fidelity(self) -> str:
        return self.params["common"]["fidelity"]

    @property
    def seed(self) -> int:
        return int(self.params["common"]["seed"])

    def llm(self, name: str):
        from tasks.core.errors import ConfigError, did_you_mean

        if name not in self.params["llms"]:
            raise ConfigError(f"llms: {did_you_mean(name, self.params['llms'])}")
        return StubLLM(name, self.params["llms"][name])

    def encoder(self, name: str):
        return StubEncoder(name)


def build_rm(name: str, entry: dict, res: StubResources):
    """make_rm, except that a kind loading weights stops where it would load them."""
    from tasks.models.rms.registry import KINDS, NOT_RM, make_rm, resource_requests
    from tasks.models.rms.seq_cls import _HFRewardModel

    cls = KINDS[entry["kind"]]
    if issubclass(cls, _HFRewardModel):
        from tasks.models.rms.registry import check

        problems = check(name, entry)
        assert not problems, problems
        resource_requests(name, entry)
        rm = object.__new__(cls)
        _HFRewardModel.__init__(rm, name, {k: v for k, v in entry.items() if k not in NOT_RM})
        return rm
    return make_rm(name, entry, res)


def build_backend(key: str, entry: dict):
    from tasks.models.llm import BACKENDS, make_backend
    from tasks.models.llm.registry import CLIENT_OPTIONS, check

    problems = check(entry, key)
    assert not problems, problems
    if entry["backend"] == "dummy":
        return make_backend(entry)
    cls = BACKENDS[entry["backend"]]
    options = {k: v for k, v in entry.items() if k != "backend" and k not in CLIENT_OPTIONS}
    inspect.signature(cls.__init__).bind(None, **options)   # the constructor takes these options
    if entry["backend"] == "llamacpp":
        from tasks.models.llm.backends.llamacpp import resolve_gguf

        resolve_gguf(entry.get("model", "embedded:smollm2-135m"))
    return None


def build(params: dict) -> None:
    """Raise on anything a stage would refuse in what these params name."""
    from tasks.core import stage_table as st
    from tasks.core.prompts import render  # noqa: F401 - prompts are read by it
    from tasks.downstream.correlation.methods import DOWNSTREAM
    from tasks.downstream.correlation.primary import primary_rms
    from tasks.downstream.rl.algorithms import ALGORITHMS
    from tasks.downstream.rl.policy import _gguf
    from tasks.models.encoders import resolve_model
    from tasks.models.judge import make_judge
    from tasks.models.retrieval import RETRIEVERS
    from tasks.models.strategies import STRATEGIES
    from tasks.ops.task_runners import TASK_RUNNERS
    from tasks.stages.benchmarks import BENCHMARKS
    from tasks.stages.sources import SOURCES

    for s in st.TABLE:   # every stage's params and deps, for every key it fans out over
        for key in (st.fan_keys(s, params) if s.per_rm else [None]):
            st.used_params(params, s.name, key)
            for dep in s.deps:
                st.resolve(dep, params, key, s)
    res = StubResources(params)
    rms = {name: build_rm(name, entry, res) for name, entry in params["scoring"]["rms"].items()}
    for name in params["rl"]["rms"]:
        from tasks.downstream.rl.reward import rl_capable

        assert rl_capable(rms[name]), f"rl.rms: {name} cannot score an answer alone"
    for name, entry in params["llms"].items():
        build_backend(f"llms.{name}", entry)
    for group in ("pairs", "bon"):
        make_judge(params[group]["judge"], encoder_factory=StubEncoder, llm_factory=res.llm, seed=res.seed,
                   key=f"{group}.judge")
    TASK_RUNNERS.lookup(params["scale"]["task_runner"], "scale.task_runner")
    SOURCES.lookup(params["ingest"]["source"], "ingest.source")
    RETRIEVERS.lookup(params["profiles"]["retriever"], "profiles.retriever")
    ALGORITHMS.lookup(params["rl"]["algorithm"], "rl.algorithm")
    for key in ("train_rm.strategy", "leaderboard.heatmap_strategy", "bon.strategy", "rl.strategy",
                "correlation.strategy", "releases.rank_strategy"):
        group, name = key.split(".")
        STRATEGIES.lookup(params[group][name], key)
    for name in params["correlation"]["downstream"]:
        DOWNSTREAM.lookup(name, "correlation.downstream")
    for name, entry in (params.get("benchmarks") or {}).items():
        BENCHMARKS.lookup(entry["source"], f"benchmarks.{name}.source")
    for encoder in (params["profiles"]["encoder"], params["rubrics"]["match_encoder"], params["train_rm"]["backbone"]):
        resolve_model(encoder)
    _gguf(params["rl"]["policy"]["model"])
    assert primary_rms(params, None), "correlation.primary.rms names no RM"
    for key in ("rubrics.prompt", "pairs.chosen_prompt", "pairs.rejected_prompt", "bon.prompt", "rl.prompt"):
        group, name = key.split(".")
        Path(params[group][name]).read_text(encoding="utf-8")
