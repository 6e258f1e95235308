"""Downstream methods are one registry: the correlation stage and the report loop over it, so a new method
is one module registering a Method (its per-question table and how to read it), a line in the registry's
loader and its params; it then gets correlated with every benchmark and a report section of its own."""
import copy

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from tasks.downstream.correlation import stage
from tasks.downstream.correlation.sides import Side, read_downstream
from tasks.downstream.correlation.methods import DOWNSTREAM, Method, methods
from tasks.core.errors import ConfigError
from tasks.ops.params import validate
from tests.conftest import ROOT
from tests.test_correlation_stage import BON, P, RMS, outs, write_scores


def test_bon_and_rl_are_registered_in_order_and_the_table_reads_their_tables():
    from tasks.core.stage_table import STAGES

    assert [m.name for m in methods()] == ["bon", "rl"]
    assert STAGES["correlation"].inputs == {m.name: m.per_question for m in methods()}
    assert {m.per_question for m in methods()} | {p for m in methods() for p in m.report.values()} <= \
        set(STAGES["report"].deps)


def test_an_unknown_method_is_refused_before_any_work():
    p = yaml.safe_load((ROOT / "params.yaml").read_text())
    p["correlation"]["downstream"] = ["bon", "dpo"]
    with pytest.raises(ConfigError, match=r"correlation.downstream\[1\]: unknown name 'dpo'"):
        validate(p)


def _load_dpo(path, p):
    side = Side("dpo", f"{path}: the DPO policy of each RM")
    for r in read_downstream(path, "dpo", "dpo_eval", "data/dpo/answers.parquet", ("rm", "question_id", "score")):
        side.per_question.setdefault(r["rm"], {})[r["question_id"]] = r["score"]
    return side


@pytest.fixture
def dpo(tmp_path, monkeypatch):
    """A third method, registered as its module would register it."""
    path = tmp_path / "dpo.parquet"
    rows = [{"rm": rm, "question_id": f"q{i}", "score": BON[rm] + (i % 2) * 0.01} for rm in RMS for i in range(10)]
    pq.write_table(pa.Table.from_pylist(rows), path)
    monkeypatch.setitem(DOWNSTREAM, "dpo", Method("dpo", "DPO", str(path), "dpo_eval", _load_dpo))
    return str(path)


def test_a_registered_method_is_correlated_like_bon(tmp_path, dpo):
    p = {**P, "downstream": ["dpo"]}
    metrics = stage.run({"common": {"seed": 2604}, "correlation": p}, {"scores": write_scores(tmp_path), "dpo": dpo},
                        outs(tmp_path))
    rows = pq.read_table(tmp_path / "out/correlation.parquet").to_pylist()
    spearman = [r for r in rows if r["benchmark"] == "personalised" and r["metric"] == "spearman"
                and r["predictor"] == "accuracy"]
    assert [(r["downstream"], r["value"]) for r in spearman] == [("dpo", 1.0)]
    assert metrics["not_capable"] == {"dpo": []}


def test_a_registered_method_gets_the_generic_report_section(tmp_path, dpo):
    from tasks.ops.report import methods as report_methods
    from tasks.ops.report.sources import Sources

    sections = report_methods.sections(Sources({"dpo_per_question": dpo}), {"common": {"seed": 1}, "correlation": P})
    assert [s["name"] for s in sections] == ["bon", "rl", "dpo"]
    bon, rl, new = sections
    assert bon["context"] is None and rl["context"] is None, "no outputs of theirs: their sections say so"
    assert new["template"] == report_methods.GENERIC and new["title"] == "DPO"
    got = {r["rm"]: (r["score"], r["n"]) for r in new["context"]["rows"]}
    assert got == {rm: (f"{BON[rm] + 0.005:.3f}", 10) for rm in RMS}


def test_the_run_page_draws_a_section_per_method(tmp_path, dpo):
    from tasks.ops.report import build

    params = copy.deepcopy(yaml.safe_load((ROOT / "params.yaml").read_text()))
    html = build.render("run.html.j2", build.run_context(params, {"dpo_per_question": dpo}, "v"))
    for name, title in (("bon", "Best-of-N"), ("rl", "RL"), ("dpo", "DPO")):
        assert f'<section id="{name}">' in html and f'<a href="#{name}">{title}</a>' in html
    assert 'id="dpo-table"' in html and 'id="no-rl"' in html
