"""Every pluggable kind registers one way (tasks/core/registry.py): by decorator, looked up with "did you
mean", listed for `prbench params --doc` and `prbench score --help`; a name registered twice is refused
naming both places, so a second plug-in never silently replaces the first."""
import inspect
import typing

import pytest

from tasks.core.errors import ConfigError
from tasks.core.registry import Registry
from tasks.ops.params import registries

HERE = "tests/test_registries.py"


def _line() -> int:
    return inspect.currentframe().f_back.f_lineno


def _kinds():
    """Each pluggable kind and its registry, as the code holds them."""
    from tasks.downstream.correlation.methods import DOWNSTREAM
    from tasks.downstream.rl.algorithms import ALGORITHMS
    from tasks.models.judge import JUDGES
    from tasks.models.llm.backends import BACKENDS
    from tasks.models.retrieval import RETRIEVERS
    from tasks.models.rms.registry import KINDS
    from tasks.models.strategies import STRATEGIES
    from tasks.ops.report.methods import OWN
    from tasks.ops.task_runners import TASK_RUNNERS
    from tasks.stages.benchmarks import BENCHMARKS
    from tasks.stages.sources import READERS, SOURCES

    return {"RM kinds": KINDS, "benchmarks": BENCHMARKS, "LLM backends": BACKENDS, "judges": JUDGES,
            "retrievers": RETRIEVERS, "RL algorithms": ALGORITHMS, "strategies": STRATEGIES, "source formats": READERS,
            "ingest sources": SOURCES, "downstream methods": DOWNSTREAM, "task runners": TASK_RUNNERS,
            "report sections of downstream methods": OWN}


def test_a_name_registered_twice_is_refused_naming_both_places():
    reg = Registry("widget")

    @reg.register("w")
    def first():
        pass
    first_line = _line() - 3
    with pytest.raises(ConfigError) as exc:
        @reg.register("w")
        def second():
            pass
    second_line = _line() - 3
    assert str(exc.value) == f"widget 'w' registered twice: {HERE}:{first_line} and {HERE}:{second_line}"
    assert reg["w"] is first


def test_a_second_rm_kind_under_a_taken_name_names_the_first_registration():
    from tasks.models.rms.baselines import RandomRM
    from tasks.models.rms.registry import KINDS, register

    with pytest.raises(ConfigError, match=r"kind 'random' registered twice: tasks/models/rms/baselines\.py:\d+ and "
                                          rf"{HERE}:\d+$"):
        @register
        class Random(RandomRM):
            kind = "random"
    assert KINDS["random"] is RandomRM


def test_a_test_still_plants_a_kind_with_monkeypatch(monkeypatch):
    from tasks.models.retrieval import RETRIEVERS

    before = RETRIEVERS.names()
    with monkeypatch.context() as m:
        m.setitem(RETRIEVERS, "planted", object)
        assert RETRIEVERS.lookup("planted", "profiles.retriever") is object
    assert RETRIEVERS.names() == before


@pytest.mark.parametrize("kind", sorted(_kinds()))
def test_every_pluggable_kind_is_a_registry_filled_by_decorator(kind):
    reg = _kinds()[kind]
    assert isinstance(reg, Registry) and reg.names(), kind
    for name in reg.names():
        where = reg.where(name)
        assert where and where.startswith("tasks/"), (kind, name, where)
    with pytest.raises(ConfigError, match=r"the\.key: unknown name"):
        reg.lookup("no-such-" + reg.names()[0], "the.key")


def test_each_registry_checked_key_is_a_plain_string_in_the_schema():
    """A Literal beside a registry would be a second list of the names, bound to drift."""
    from tasks.core.params.schema_downstream import Root

    for key, (field, reg) in registries().items():
        assert isinstance(reg, Registry) and reg in _kinds().values(), key
        model, *path = key.split(".")
        annotation = Root.model_fields[model].annotation
        for part in path:
            group = [a for a in (annotation, *typing.get_args(annotation)) if hasattr(a, "model_fields")][0]
            annotation = group.model_fields[part].annotation
        assert "Literal" not in str(annotation), (key, annotation)


def test_params_doc_lists_the_registered_names_whatever_params_yaml_holds(tmp_path, monkeypatch, capsys):
    from flows.cli import main
    from tasks.downstream.rl.algorithms import ALGORITHMS
    from tasks.models.rms.registry import KINDS

    monkeypatch.chdir(tmp_path)
    (tmp_path / "params.yaml").write_text("scoring: [not, a, mapping\n")
    monkeypatch.setitem(ALGORITHMS, "dpo", object)   # a kind added is listed: the names come from the registry
    assert main(["params", "--doc"]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    assert "(one of: ppo, grpo, rloo, dpo)" in rows["rl.algorithm"]
    assert "(one of: local, dask, ray)" in rows["scale.task_runner"]
    assert "(one of: files, hub)" in rows["ingest.rl_prompts.source"]
    kinds = rows["scoring.rms"].split("(kind one of: ")[1].split(")")[0].split(", ")
    assert sorted(kinds) == sorted(KINDS.names()) and "seq-cls" in kinds   # in registration order: import order
    assert "dummy" in rows["llms"].split("(backend one of: ")[1].split(")")[0].split(", ")


def test_score_help_lists_every_rm_kind_and_benchmark(capsys):
    from flows.cli import main
    from tasks.models.rms.registry import KINDS
    from tasks.stages.benchmarks import BENCHMARKS

    with pytest.raises(SystemExit):
        main(["score", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert f"an RM kind: {', '.join(KINDS.names())}" in text.replace("- ", "-")
    assert f"list-wise scorer: {', '.join(BENCHMARKS.names())}" in text.replace("- ", "-")
