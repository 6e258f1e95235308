"""`batch_invariant`: a seq-cls score is a function of the answer's own tokens, the model and the dtype, never of
`batch_size`, its batch mates or the pairs' order (bit for bit), through `prbench score` and in process; the
default (length-sorted batches) is not, so the check can fail. Results name the dtype and count the decisions
within its resolution (docs/statistics.md#leaderboard)."""
import json
import random

import pyarrow.parquet as pq
import pytest

from flows.cli import main as cli
from tasks.core import precision
from tasks.models.rms.base import PairInput
from tasks.models.rms.registry import make_rm
from tests.conftest import ROOT, SAMPLE
from tests.fakes.hf_hub import tiny_seq_cls


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return str(tiny_seq_cls(tmp_path_factory.mktemp("tiny-seq-cls") / "rm"))


def _pairs(n=24):
    """Varied lengths (0 to 32 context words), some cut at max_length 64."""
    return [PairInput(f"q{i}", f"What should I try for hobby number {i}?",
                      " ".join(f"post{i}-{k} about weekends" for k in range(i % 9 * 4)),
                      " ".join(["Try something small first."] * (1 + i % 5)), "Just relax." * (1 + i % 3))
            for i in range(n)]


def _bits(rm, pairs, batch_size):
    rm.batch_size = batch_size
    return [(s.chosen.score, s.rejected.score) for s in rm.score_pairs(pairs)]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_scores_are_the_same_bits_at_any_batch_size_and_order_only_when_invariant(folder, dtype):
    pairs = _pairs()
    order = list(range(len(pairs)))
    random.Random(3).shuffle(order)
    on = make_rm("on", {"kind": "seq-cls", "model": folder, "max_length": 64, "dtype": dtype,
                        "batch_invariant": True}, None)
    want = _bits(on, pairs, 1)
    assert _bits(on, pairs, 3) == want and _bits(on, pairs, 16) == want
    shuffled = _bits(on, [pairs[i] for i in order], 16)
    assert [shuffled[order.index(i)] for i in range(len(pairs))] == want, "the pairs' order changes no bit"
    assert on.numerics() == {"dtype": dtype, "device": "cpu", "attn_implementation": on.model.config._attn_implementation,
                             "batch_invariant": True}
    off = make_rm("off", {"kind": "seq-cls", "model": folder, "max_length": 64, "dtype": dtype}, None)
    assert off.numerics()["batch_invariant"] is False, "off by default"
    assert _bits(off, pairs, 1) != _bits(off, pairs, 16), "length-sorted batches move the last bits"


def test_prbench_score_writes_the_same_bits_at_batch_sizes_1_and_16(folder, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    got = {}
    for bs in (1, 16):
        out = tmp_path / f"bs{bs}"
        assert cli(["score", "--model", folder, "--data", str(SAMPLE / "rewardbench"), "--strategy", "none,raw_profile",
                    "--limit", "8", "--max-length", "96", "--batch-size", str(bs), "--option", "batch_invariant=true",
                    "--out", str(out)]) == 0
        got[bs] = pq.read_table(out / "scores.parquet", columns=["score_chosen", "score_rejected"]).to_pylist()
    printed = capsys.readouterr().out
    assert got[1] == got[16] and len({r["score_chosen"] for r in got[1]}) > 4
    assert "scores in float32 on cpu" in printed and "batch-invariant" in printed
    assert "decided within float32 resolution" in printed
    doc = json.loads((tmp_path / "bs16" / "results.json").read_text())
    assert doc["model"]["scoring"]["dtype"] == "float32" and doc["model"]["scoring"]["batch_invariant"] is True
    assert doc["model"]["scoring"]["device"] == "cpu" and doc["model"]["scoring"]["attn_implementation"]
    micro = doc["results"]["rms"]["rm"]["none"]
    assert micro["score_dtype"] == "float32" and micro["within_resolution"] == 0
    assert pq.read_table(tmp_path / "bs1" / "scores.parquet").column("score_dtype").to_pylist() == ["float32"] * len(got[1])


def test_resolution_is_a_few_ulps_of_the_scores_magnitude():
    assert precision.resolution("bfloat16", 1.5) == 8 * 2 ** -7
    assert precision.resolution("bfloat16", -3.0) == 8 * 2 ** -6
    assert precision.resolution("float32", 1.5) == 8 * 2 ** -23
    assert precision.within("bfloat16", 1.5, 1.5 + 2 ** -5) and not precision.within("bfloat16", 1.5, 1.6)
    assert not precision.within("bfloat16", 1.5, 1.5), "a tie is not decided"
    assert precision.within("float32", 1.0, 1.0 + 2 ** -21) and not precision.within("float32", 1.0, 1.0 + 2 ** -19)
    assert not precision.within(None, 1.0, 1.0 + 1e-9), "no dtype (a judge): never counted"
    assert precision.within("bfloat16", 1.0, 1.0625), "a margin of exactly the resolution is within it"


def test_the_count_leaves_out_ties_and_invalid_rows_and_says_none_without_a_dtype():
    rows = [_row(0, 1.0, 1.0 + 2 ** -8, "bfloat16"), _row(1, 2.0, 2.0, "bfloat16"), _row(2, 1.0, 1.5, "bfloat16"),
            {**_row(3, 1.0, 1.0 + 2 ** -8, "bfloat16"), "invalid": True}]
    assert precision.count_within(rows) == 1, "the decided, valid pair within resolution only"
    assert precision.fields(rows) == {"score_dtype": "bfloat16", "within_resolution": 1}
    assert precision.fields([_row(0, 1.0, 1.0 + 2 ** -8, None)]) == {"score_dtype": None, "within_resolution": None}


def _row(i, chosen, rejected, dtype):
    return {"rm": "rm", "benchmark": "personalised", "strategy": "none", "question_id": f"q{i}", "domain": "Art",
            "split": "test", "score_chosen": chosen, "score_rejected": rejected, "correct": chosen > rejected,
            "tie": chosen == rejected, "invalid": False, "truncated": False, "order_consistent": None,
            "planner_failed": False, "picked_a": None, "score_dtype": dtype}


def test_leaderboard_and_page_show_the_dtype_and_the_count_within_it():
    from tasks.ops.report import board
    from tasks.stages import leaderboard

    # bf16 scores near 1.5 (ulp 2^-7): margins of 1 and 3 ulps are within 8 ulps, 0.25 is not, a tie is not decided
    u = 2 ** -7
    rows = [_row(0, 1.5 + u, 1.5, "bfloat16"), _row(1, 1.5, 1.5 + 3 * u, "bfloat16"), _row(2, 1.75, 1.5, "bfloat16"),
            _row(3, 1.5, 1.5, "bfloat16"), _row(4, 0.5, 1.5, "bfloat16")]
    p = {"tie_policy": "strict", "bootstrap": 50, "ci": 0.95, "split": "test"}
    lb = leaderboard.leaderboard_rows(rows, p, 0)
    micro = next(r for r in lb if r["domain"] == "micro")
    assert micro["score_dtype"] == "bfloat16" and micro["within_resolution"] == 2
    metrics = leaderboard.leaderboard_metrics(lb, rows, p)
    assert metrics["rms"]["rm"]["none"]["within_resolution"] == 2
    page = board.leaderboard(lb, list(lb[0]), metrics)
    col = [h["key"] for h in page["head"]].index("resolution")
    assert page["rows"][0]["cells"][col]["text"] == "decided within bfloat16 resolution: 2"
    judged = leaderboard.leaderboard_rows([{**r, "score_dtype": None} for r in rows], p, 0)
    assert {r["within_resolution"] for r in judged} == {None}, "no model ran here: no count"


def test_score_metrics_refuse_chunks_scored_with_different_numerics_and_the_page_names_them():
    from tasks.core.errors import ConfigError
    from tasks.models import chunks
    from tasks.ops.report import provenance

    gpu = {"dtype": "bfloat16", "device": "cuda", "attn_implementation": "sdpa", "batch_invariant": True}
    assert chunks.same_numerics([{"numerics": gpu}, {"numerics": dict(gpu)}], "rm") == gpu
    with pytest.raises(ConfigError, match=r"scoring\.rms\.rm: workers scored with different numerics.*cpu.*cuda"):
        chunks.same_numerics([{"numerics": gpu}, {"numerics": {**gpu, "device": "cpu"}}], "rm")
    rows = provenance.rm_rows({"rm": {"kind": "seq-cls", "model": "m"}, "judge": {"kind": "random"}}, {},
                              {"rm": {"identity": "seq-cls:m", "numerics": gpu}, "judge": {"numerics": {}}}, None)
    assert [r["scored_with"] for r in rows] == [None, "bfloat16 · cuda · sdpa attention · batch-invariant"]
