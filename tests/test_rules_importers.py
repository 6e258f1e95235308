"""What the pairwise importers keep from a file (generic, ppe-human): each item's id as the file gives it, its
subset from the file (`subset`; PPE's `language`) or "all" where the row has none, PPE's ties left out and counted
twice over (the count restarts per load), and the published metrics naming their rule. Read off the fixtures and
small files written here."""
from __future__ import annotations

import json

import pytest

from tasks.core.errors import DataError
from tasks.stages.benchmarks import scoring
from tests.conftest import ROOT

F = ROOT / "data" / "benchmarks" / "fixtures"


def _lines(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _write(tmp_path, name, rows):
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_generic_keeps_ids_and_subsets_and_all_where_none(tmp_path):
    rows = _lines(F / "generic.jsonl")
    _, items = scoring.load("generic", {"source": "generic", "path": str(F / "generic.jsonl")})
    assert [(i.id, i.subset) for i in items] == [(str(r["id"]), r["subset"]) for r in rows]
    bare = _write(tmp_path, "generic.jsonl", [{k: v for k, v in r.items() if k != "subset"} for r in rows])
    _, items = scoring.load("generic", {"source": "generic", "path": str(bare)})
    assert {i.subset for i in items} == {"all"}


def test_ppe_keeps_ids_and_languages_drops_and_counts_ties(tmp_path):
    rows = _lines(F / "ppe-human.jsonl")
    bench, items = scoring.load("ppe-human", {"source": "ppe-human", "path": str(F / "ppe-human.jsonl")})
    kept = [r for r in rows if not r["winner"].startswith("tie")]
    assert [(i.id, i.subset) for i in items] == [(r["question_id"], r["language"]) for r in kept]
    ties = len(rows) - len(kept)
    assert ties >= 1 and bench.metrics([], "strict")["ties_dropped"] == ties
    bench, _ = scoring.load("ppe-human", {"source": "ppe-human", "path": str(F / "ppe-human.jsonl")})
    assert bench.metrics([], "strict")["ties_dropped"] == ties, "counted per load, not carried over"
    assert bench.metrics([], "strict")["rule"] == bench.rule and bench.rule.startswith("pairwise accuracy with ties dropped")
    extra = _write(tmp_path, "ppe.jsonl", [*rows, {**rows[2], "question_id": "q9", "winner": "tie (bothbad)"}])
    bench, _ = scoring.load("ppe-human", {"source": "ppe-human", "path": str(extra)})
    assert bench.metrics([], "strict")["ties_dropped"] == ties + 1
    bare = _write(tmp_path, "ppe2.jsonl", [{k: v for k, v in r.items() if k != "language"} for r in kept])
    _, items = scoring.load("ppe-human", {"source": "ppe-human", "path": str(bare)})
    assert {i.subset for i in items} == {"all"}


def test_ppe_metrics_before_any_load_count_no_ties():
    from tasks.stages.benchmarks.ppe_human import PpeHuman

    assert PpeHuman().metrics([], "strict")["ties_dropped"] == 0, "nothing loaded: none dropped (not unknown)"


def _rmb(subset, correct, incorrect):
    return {"subset": subset, "method": "pointwise", "scores_correct": correct, "scores_incorrect": incorrect}


def test_rm_bench_official_numbers_by_hand():
    """RM-Bench's 3x3 matrix per domain (chosen style i beats rejected style j), averaged over the domain's items;
    hard = above the diagonal / 3, normal = the diagonal's mean, easy = below / 3; a domain with no item (math,
    code here) is left out, not the end of the list."""
    from tasks.stages.benchmarks.rm_bench import RmBench, official

    rows = [_rmb("chat", [3.0, 2.0, 1.0], [2.5, 1.5, 0.5]),      # [[1,1,1],[0,1,1],[0,0,1]]
            _rmb("chat", [0.0, 0.0, 0.0], [1.0, 1.0, 1.0]),      # zeros: the chat mean is half the first
            _rmb("safety-refuse", [1.0, 1.0, 1.0], [0.0, 0.0, 0.0])]   # ones
    got = official(rows, "the rule")
    # chat: hard 1.5/3 = 0.5, normal 0.5, easy 0 -> 1/3; safety: 1, 1, 1 -> 1
    assert got == {"rule": "the rule", "score": round((1 / 3 + 1) / 2, 4), "easy": 0.5, "normal": 0.75, "hard": 0.75,
                   "domains": {"chat": 0.3333, "safety": 1.0}}
    assert official([_rmb("math", [1.0, None, 1.0], [0.0, 0.0, 0.0])], "r") == {"rule": "r", "score": None}
    assert RmBench().metrics(rows, "strict")["rule"] == RmBench.rule


def test_rm_bench_keeps_ids_and_wants_three_styles(tmp_path):
    rows = json.loads((F / "rm-bench.json").read_text())
    _, items = scoring.load("rm-bench", {"source": "rm-bench", "path": str(F / "rm-bench.json")})
    assert [(i.id, i.subset) for i in items] == [(r["id"], r["domain"]) for r in rows]
    rows[0]["chosen"] = rows[0]["chosen"][:2]
    path = tmp_path / "rm-bench.json"
    path.write_text(json.dumps(rows))
    with pytest.raises(DataError, match="field 'chosen'"):
        scoring.load("rm-bench", {"source": "rm-bench", "path": str(path)})


# --- personalised (ours): test files only, the domain from the config, the profile cut as the scorer reads it ---

def _pers_row(i, **edit):
    row = _lines(F / "personalised.jsonl")[0]
    return {**row, "id": f"q{i}", **edit}


def test_personalised_reads_the_test_files_with_their_domain_and_all_for_a_bare_file(tmp_path):
    folder = tmp_path / "lamp"
    folder.mkdir()
    _write(folder, "Art_and_Entertainment_test.jsonl", [_pers_row(1)])
    _write(folder, "Art_and_Entertainment_train.jsonl", [_pers_row(2)])
    _write(folder, "Society_and_Culture_test.jsonl", [_pers_row(3)])
    _, items = scoring.load("personalised", {"source": "personalised", "path": str(folder)})
    assert sorted((i.id, i.subset) for i in items) == [("q1", "Art_and_Entertainment"), ("q3", "Society_and_Culture")]
    bare = _write(tmp_path, "mine.jsonl", [_pers_row(4)])
    _, items = scoring.load("personalised", {"source": "personalised", "path": str(bare)})
    assert [(i.id, i.subset, i.prompt) for i in items] == [("q4", "all", _pers_row(4)["question"])]
    assert (items[0].correct, items[0].incorrect) == ((_pers_row(4)["chosen"],), (_pers_row(4)["rejected"],))


def test_personalised_keeps_ten_posts_of_sixty_words_marking_a_cut(tmp_path):
    long, exact = " ".join(f"w{i}" for i in range(61)), " ".join(f"w{i}" for i in range(60))
    posts = [{"category": "c", "id": f"p{i}", "text": long if i == 0 else exact if i == 1 else "short"} for i in range(12)]
    path = _write(tmp_path, "p.jsonl", [_pers_row(1, profile=posts)])
    _, (item,) = scoring.load("personalised", {"source": "personalised", "path": str(path)})
    assert len(item.profile) == 10
    assert item.profile[0] == "(c) " + exact + " …" and item.profile[1] == "(c) " + exact
    assert item.profile[2] == "(c) short"


def test_personalised_refuses_a_row_without_its_pair_naming_the_field(tmp_path):
    path = _write(tmp_path, "p.jsonl", [_pers_row(1), {k: v for k, v in _pers_row(2).items() if k != "rejected"}])
    with pytest.raises(DataError) as exc:
        scoring.load("personalised", {"source": "personalised", "path": str(path)})
    assert str(exc.value).startswith(f"{path}: row 1") and "field 'rejected'" in str(exc.value)
    assert "missing" in str(exc.value) or "empty" in str(exc.value)
