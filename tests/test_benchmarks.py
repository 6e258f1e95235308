"""Every benchmark importer on its hand-written fixture (data/benchmarks/fixtures): the length-longer,
length-shorter and random RMs get the accuracies worked out by hand from the answers' word counts
(random: from its seeded coin per answer), RewardBench 2's Ties subset follows its published rule,
and each importer refuses a malformed file of its layout in one line naming file, row and field."""
import json
import math
import random
import shutil
from pathlib import Path

import pytest

from tasks.stages.benchmarks import BENCHMARKS, get, scoring
from tasks.core.errors import ConfigError, DataError
from tasks.models.rms.base import input_hash
from tasks.models.rms.registry import make_rm
from tests.conftest import ROOT

F = ROOT / "data" / "benchmarks" / "fixtures"
PATHS = {"rewardbench2": F / "rewardbench2.jsonl", "rm-bench": F / "rm-bench.json", "ppe-human": F / "ppe-human.jsonl",
         "generic": F / "generic.jsonl", "prism": F / "prism", "personal-rewardbench": F / "personal-rewardbench.jsonl",
         "personalised": F / "personalised.jsonl"}
LB = {"tie_policy": "strict", "bootstrap": 200, "ci": 0.95}
RMS = ("length-longer", "length-shorter", "random")

# (benchmark, rm, policy) -> accuracy of every strategy, from the fixtures' word counts by hand:
# e.g. rewardbench2 longer: fact-1 5 > 3 right, fact-2 2 < 6 wrong, math-1 3 = 3 tie (1 of 2 top: 1/2),
# math-2 4 = 4 = 4 tie (1 of 3: 1/3), ref:0 6 > 3 right, tied:0 min(6, 7) > 3 right -> strict 3/6, half 3.833/6
HAND = {
    ("generic", "length-longer", "strict"): 0.3333, ("generic", "length-longer", "half"): 0.5,
    ("generic", "length-shorter", "strict"): 0.3333, ("generic", "length-shorter", "half"): 0.5,
    ("personal-rewardbench", "length-longer", "strict"): 0.3333,
    ("personal-rewardbench", "length-longer", "half"): 0.5,
    ("personal-rewardbench", "length-shorter", "strict"): 0.3333,
    ("personalised", "length-longer", "strict"): 0.6667, ("personalised", "length-shorter", "strict"): 0.3333,
    ("ppe-human", "length-longer", "strict"): 0.6667, ("ppe-human", "length-shorter", "strict"): 0.3333,
    ("prism", "length-longer", "strict"): 0.3333, ("prism", "length-shorter", "strict"): 0.3333,
    ("rewardbench2", "length-longer", "strict"): 0.5, ("rewardbench2", "length-longer", "half"): 0.6389,
    ("rewardbench2", "length-longer", "drop"): 0.75, ("rewardbench2", "length-shorter", "strict"): 0.1667,
    ("rm-bench", "length-longer", "strict"): 0.0, ("rm-bench", "length-longer", "half"): 0.1667,
    ("rm-bench", "length-shorter", "strict"): 0.0,
}
# the random RM per strategy (seed 0), checked against its coin recomputed below
RANDOM = {"generic": {"none": 0.6667}, "personal-rewardbench": {"none": 0.3333, "raw_profile": 0.6667},
          "personalised": {"none": 0.6667, "raw_profile": 0.3333}, "ppe-human": {"none": 0.3333},
          "prism": {"none": 1.0, "raw_profile": 0.3333}, "rewardbench2": {"none": 0.0}, "rm-bench": {"none": 0.0}}
CHANCE = {"generic": 0.5, "personal-rewardbench": 0.5, "personalised": 0.5, "ppe-human": 0.5,
          "prism": 0.3056, "rewardbench2": 0.25, "rm-bench": 0.05}   # prism: (1/4 + 1/C(4,2) + 1/2) / 3


def _score(name, rm_kind, policy="strict", path=None):
    rm = make_rm(rm_kind, {"kind": rm_kind, **({"seed": 0} if rm_kind == "random" else {})}, None)
    bench, items = scoring.load(name, {"source": name, "path": str(path or PATHS[name])})
    rows = scoring.score(rm, name, bench, items)
    return rows, scoring.summary(rows, bench, {**LB, "tie_policy": policy}, 0)


def test_every_registered_benchmark_has_a_fixture():
    assert sorted(BENCHMARKS) == sorted(PATHS)
    assert sum(p.stat().st_size for f in PATHS.values() for p in ([f] if f.is_file() else f.iterdir())) < 20_000


@pytest.mark.parametrize("key", sorted(HAND))
def test_length_rms_score_what_was_worked_out_by_hand(key):
    name, rm, policy = key
    _, m = _score(name, rm, policy)
    strategies = get(name).strategies()
    assert list(m["strategies"]) == strategies   # raw_profile only where the benchmark has user history
    for s in strategies:
        assert m["strategies"][s]["accuracy"] == HAND[key], s
        assert m["strategies"][s]["chance"] == CHANCE[name]


@pytest.mark.parametrize("name", sorted(RANDOM))
def test_random_rm(name):
    rows, m = _score(name, "random")
    assert {s: e["accuracy"] for s, e in m["strategies"].items()} == RANDOM[name]
    bench, items = scoring.load(name, {"source": name, "path": str(PATHS[name])})
    for strategy in bench.strategies():   # the same outcome from the seeded coin, recomputed here
        ctx = scoring.contexts(items, strategy)
        coin = lambda it, c, a: random.Random(f"0:{input_hash(it.prompt, c, a)}").random()  # noqa: E731
        want = [min(coin(it, c, a) for a in it.correct) > max(coin(it, c, a) for a in it.incorrect)
                for it, c in zip(items, ctx)]
        assert [r["correct"] for r in rows if r["strategy"] == strategy] == want


def test_rewardbench2_ties_follow_the_published_rule():
    # longer: ref:0 margin 6-3 = 3; tied:0 spread 7-6 = 1, margin 6-3 = 3: both accurate, 3 > 1, min(3,3) > 1
    # -> 0.3 + 0.3 + 0.2 + 0.2 + 0.01 tanh(3/1 - 1)
    _, m = _score("rewardbench2", "length-longer")
    pub = m["strategies"]["none"]["published"]
    assert pub["subsets"]["Ties"] == round(1.0 + 0.01 * math.tanh(2), 4) == 1.0096
    # outside Ties a k-way tie at the top is worth 1/k whatever the tie policy (Math: ties of lengths)
    assert pub["subsets"] == {"Factuality": 0.5, "Math": 0.4167, "Ties": 1.0096}
    assert pub["score"] == round((0.5 + 0.4167 + 1.0096) / 3, 4)
    # shorter: ref margin -6-(-2) = -4; tied spread -6-(-7) = 1, margin -7-(-2) = -5: nothing holds,
    # only the tanh term: 0.01 tanh(-5 - 1)
    _, m = _score("rewardbench2", "length-shorter")
    assert m["strategies"]["none"]["published"]["subsets"]["Ties"] == round(0.01 * math.tanh(-6), 4) == -0.01
    assert m["strategies"]["none"]["subsets"]["Ties"]["chance"] == round((1 / 3 + 1 / 6) / 2, 4)


def test_rm_bench_style_matrix():
    # chat-1 chosen (2, 7, 12) vs rejected (1, 6, 11) words; math-1 (3, 3, 2) vs (1, 2, 2)
    _, m = _score("rm-bench", "length-longer")
    # longer: chat [[1,0,0],[1,1,0],[1,1,1]] (hard 0, normal 1, easy 1), math [[1,1,1],[1,1,1],[1,0,0]]
    # (hard 1, normal 2/3, easy 2/3); each domain its mean, the score the mean of the domains
    pub = _score("rm-bench", "length-longer")[1]["strategies"]["none"]["published"]
    assert {k: pub[k] for k in ("easy", "normal", "hard", "domains", "score")} == {
        "easy": 0.8333, "normal": 0.8333, "hard": 0.5, "domains": {"chat": 0.6667, "math": 0.7778}, "score": 0.7222}
    pub = _score("rm-bench", "length-shorter")[1]["strategies"]["none"]["published"]
    assert {k: pub[k] for k in ("easy", "normal", "hard", "domains", "score")} == {
        "easy": 0.0, "normal": 0.0, "hard": 0.5, "domains": {"chat": 0.3333, "math": 0.0}, "score": 0.1667}


def test_profiles_map_user_history():
    _, items = scoring.load("prism", {"source": "prism", "path": str(PATHS["prism"])})
    assert items[0].profile[0] == "About me: I am a retired teacher who loves gardening."
    assert "factuality 95" in items[0].profile[2]
    _, items = scoring.load("personal-rewardbench", {"source": "personal-rewardbench",
                                                     "path": str(PATHS["personal-rewardbench"])})
    assert [len(it.profile) for it in items] == [1, 1, 1]   # the user's train/validation pairs only
    assert "Recommend a podcast." in items[0].profile[0] and "Recommend a history book" not in items[0].profile[0]
    _, items = scoring.load("ppe-human", {"source": "ppe-human", "path": str(PATHS["ppe-human"])})
    assert all(it.profile is None for it in items)


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _break(tmp_path, name, row, edit):
    src = PATHS[name]
    if name == "prism":
        dst = tmp_path / "prism"
        shutil.copytree(src, dst)
        rows = _jsonl(dst / "conversations.jsonl")
        edit(rows[row])
        _write_jsonl(dst / "conversations.jsonl", rows)
        return dst, dst / "conversations.jsonl"
    if src.suffix == ".json":
        rows = json.loads(src.read_text())
        edit(rows[row])
        dst = tmp_path / src.name
        dst.write_text(json.dumps(rows))
        return dst, dst
    rows = _jsonl(src)
    edit(rows[row])
    dst = _write_jsonl(tmp_path / src.name, rows)
    return dst, dst


MALFORMED = {   # name -> (row, edit, field named in the error)
    "rewardbench2": (2, lambda r: r.update(num_incorrect=2), "num_incorrect"),
    "rm-bench": (1, lambda r: r["rejected"].pop(), "rejected"),
    "ppe-human": (3, lambda r: r.update(winner="model_c"), "winner"),
    "generic": (1, lambda r: r.update(chosen=""), "chosen"),
    "prism": (1, lambda r: r["conversation_history"][2].update(score="high"), "conversation_history[2].score"),
    "personal-rewardbench": (2, lambda r: r.update(rejected={"role": "assistant"}), "rejected"),
    "personalised": (1, lambda r: r["profile"][0].pop("text"), "profile[0].text"),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_file_is_refused_in_one_line(tmp_path, name):
    row, edit, field = MALFORMED[name]
    path, file = _break(tmp_path, name, row, edit)
    with pytest.raises(DataError) as exc:
        scoring.load(name, {"source": name, "path": str(path)})
    line = str(exc.value)
    assert "\n" not in line and line.startswith(f"{file}: row {row}") and f"field '{field}'" in line


@pytest.mark.parametrize("name, field", [("rewardbench2", "id"), ("rm-bench", "id"), ("generic", "id"),
                                         ("ppe-human", "question_id"), ("prism", "conversation_id")])
def test_a_row_without_its_id_is_refused_naming_the_id_field(tmp_path, name, field):
    path, file = _break(tmp_path, name, 1, lambda r: r.pop(field))
    with pytest.raises(DataError) as exc:
        scoring.load(name, {"source": name, "path": str(path)})
    line = str(exc.value)
    assert "\n" not in line and line.startswith(f"{file}: row 1") and f"field '{field}': missing" in line, line


@pytest.mark.parametrize("line, says", [("{not json", "row 2"), ("[1, 2]", "row 2: expected an object per row")])
def test_an_unreadable_or_non_object_line_is_refused_in_one_line(tmp_path, line, says):
    """Every importer goes through the same row check: a broken JSONL line or a row that is not an
    object stops the load, naming the file and the row, before any item is built."""
    lines = PATHS["ppe-human"].read_text().splitlines()
    path = tmp_path / "ppe-human.jsonl"
    path.write_text("\n".join([*lines[:2], line, *lines[2:]]) + "\n")
    with pytest.raises(DataError) as exc:
        scoring.load("ppe-human", {"source": "ppe-human", "path": str(path)})
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith(f"{path}: {says}"), msg


def test_rewardbench2_ties_ids_are_checked(tmp_path):
    rows = _jsonl(PATHS["rewardbench2"])
    rows[4]["id"] = "reference-0"
    path = _write_jsonl(tmp_path / "rb2.jsonl", rows)
    with pytest.raises(DataError, match=r"row 4 \(id=reference-0\): field 'id': a Ties id must be"):
        scoring.load("rewardbench2", {"source": "rewardbench2", "path": str(path)})


def test_unknown_benchmark_and_subset_and_limit():
    with pytest.raises(ConfigError, match="benchmarks.x.source: unknown name 'rewardbench'.*did you mean 'rewardbench2'"):
        scoring.load("x", {"source": "rewardbench", "path": str(PATHS["rewardbench2"])})
    with pytest.raises(ConfigError, match="benchmarks.x.pth: unknown key"):
        scoring.load("x", {"source": "rewardbench2", "pth": "a"})
    _, items = scoring.load("x", {"source": "rewardbench2", "path": str(PATHS["rewardbench2"]), "subset": "Math"})
    assert [it.id for it in items] == ["math-1", "math-2"]
    _, items = scoring.load("x", {"source": "rewardbench2", "path": str(PATHS["rewardbench2"]), "limit": 1})
    assert len(items) == 1
