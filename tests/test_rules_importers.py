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
    bench, items = scoring.load("personalised", {"source": "personalised", "path": str(folder)})
    assert sorted((i.id, i.subset) for i in items) == [("q1", "Art_and_Entertainment"), ("q3", "Society_and_Culture")]
    assert bench.metrics([], "strict")["rule"] == bench.rule and "the authors' release" in bench.rule
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


# --- personal-rewardbench (SynthesizeMe): the test rows are the benchmark, the user's own train/val rows the profile ---

def _prb(user, split, prompt="p", chosen="c", rejected="r", **extra):
    return {"user_id": user, "split": split, "prompt": prompt, "chosen": chosen, "rejected": rejected, **extra}


def _prb_load(tmp_path, rows):
    path = _write(tmp_path, "prb.jsonl", rows)
    return path, scoring.load("personal-rewardbench", {"source": "personal-rewardbench", "path": str(path)})[1]


def test_personal_rewardbench_profiles_are_the_users_own_history_clipped_at_forty_words(tmp_path):
    forty, more = " ".join(f"w{i}" for i in range(40)), " ".join(f"w{i}" for i in range(41))
    rows = [_prb("u1", "train", prompt=more, chosen=forty, rejected="no"), _prb("u2", "train", prompt="other user"),
            _prb("u1", "val", prompt="second"), _prb("u1", "validation", prompt="third"),
            _prb("u1", "test", prompt="asked", chosen="yes", rejected="no"), _prb("u2", "test"), _prb("u3", "test")]
    _, items = _prb_load(tmp_path, rows)
    assert [i.id for i in items] == ["u1:4", "u2:5", "u3:6"]
    from tasks.stages.benchmarks.personal_rewardbench import PersonalRewardBench
    assert PersonalRewardBench().metrics([], "strict")["rule"] == PersonalRewardBench.rule
    u1 = items[0]
    assert (u1.prompt, u1.correct, u1.incorrect, u1.subset) == ("asked", ("yes",), ("no",), "all")
    assert u1.meta == {"user_id": "u1"}
    assert u1.profile == (f"Asked: {forty} … | preferred: {forty} | over: no",
                          "Asked: second | preferred: c | over: r", "Asked: third | preferred: c | over: r")
    assert items[1].profile == ("Asked: other user | preferred: c | over: r",) and items[2].profile == ()


def test_personal_rewardbench_joins_a_conversation_prompt_by_role(tmp_path):
    turns = [{"role": "user", "content": "hi"}, {"content": "and then?"}, {"role": "assistant", "content": "ok"}]
    rows = [{k: v for k, v in _prb("u", "test").items() if k != "prompt"} | {"context": turns},
            _prb("u", "test", prompt=[{"role": "user", "content": "only"}])]
    _, items = _prb_load(tmp_path, rows)
    assert items[0].prompt == "user: hi\nuser: and then?\nassistant: ok" and items[1].prompt == "only"


@pytest.mark.parametrize("edit, field, says", [
    ({"prompt": [{"role": "user", "content": "a"}, {"role": "user"}]}, "prompt[1]", "expected a message {role, content}"),
    ({"prompt": ["plain"]}, "prompt[0]", "expected a message {role, content}"),
    ({"prompt": []}, "prompt", "expected a string or a list of messages"),
    ({"prompt": None}, "prompt", "missing"),
    ({"split": "dev"}, "split", "expected train, val or test, got 'dev'"),
    ({"split": None}, "split", "missing"),
])
def test_personal_rewardbench_names_the_field_of_a_bad_row(tmp_path, edit, field, says):
    rows = [_prb("u", "train"), {**_prb("u", "test"), **edit}]
    with pytest.raises(DataError) as exc:
        _prb_load(tmp_path, rows)
    assert str(exc.value).startswith(f"{tmp_path / 'prb.jsonl'}: row 1 (id=u)"), "the row named by its user"
    assert (exc.value.field, exc.value.message) == (field, says)


def test_personal_rewardbench_a_bad_context_names_the_context_field(tmp_path):
    row = {k: v for k, v in _prb("u", "test").items() if k != "prompt"} | {"context": [{"role": "user", "content": 3}]}
    with pytest.raises(DataError, match=r"field 'context\[0\]'"):
        _prb_load(tmp_path, [row])


# --- prism: best-of-k from the opening turn's ratings, the survey as profile ----------------------------------

def _turn(role, content, score=None, turn=0):
    return {"turn": turn, "role": role, "content": content, **({} if score is None else {"score": score})}


def _prism(tmp_path, conversations, survey=None):
    folder = tmp_path / "prism"
    folder.mkdir(exist_ok=True)
    _write(folder, "survey.jsonl", survey or [{"user_id": "u", "self_description": "me"}])
    _write(folder, "conversations-0000.jsonl", conversations)
    return scoring.load("prism", {"source": "prism", "path": str(folder)})


def _conv(cid, history, **extra):
    return {"conversation_id": cid, "user_id": "u", "conversation_history": history, **extra}


def test_prism_the_top_rated_opening_responses_are_correct_and_the_strictly_lower_incorrect(tmp_path):
    convs = [_conv("c1", [_turn("user", "q?"), _turn("model", "a", 80), _turn("model", "b", 80.0),
                          _turn("model", "c", 79), _turn("user", "later", turn=1), _turn("model", "z", 100, turn=1)],
                   conversation_type="values guided"),
             _conv("alone", [_turn("user", "q"), _turn("model", "only", 50)]),
             _conv("alike", [_turn("user", "q"), _turn("model", "x", 50), _turn("model", "y", 50)]),
             _conv("c2", [_turn("model", "m", 10), _turn("user", "first"), _turn("user", "later", turn=1),
                          _turn("user", "second"), _turn("model", "n", 90)])]
    bench, items = _prism(tmp_path, convs)
    assert [i.id for i in items] == ["c1", "c2"]
    c1, c2 = items
    assert (c1.prompt, c1.correct, c1.incorrect, c1.subset) == ("q?", ("a", "b"), ("c",), "values guided")
    assert (c2.prompt, c2.correct, c2.incorrect, c2.subset) == ("first", ("n",), ("m",), "all")
    assert c1.meta == {"user_id": "u"} and c1.profile == ("About me: me",)
    assert bench.metrics([], "strict")["left_out"] == 2, "one response, and all rated alike"
    assert bench.metrics([], "strict")["rule"] == bench.rule


def test_prism_the_survey_becomes_profile_lines_in_a_fixed_order(tmp_path):
    survey = [{"user_id": "u", "self_description": "teacher", "system_string": "be brief",
               "stated_prefs": {"safety": 60, "values": 40, "fluency": None, "helpfulness": 0}},
              {"user_id": "v", "stated_prefs": {"values": 5}}, {"user_id": "w", "system_string": "x", "stated_prefs": {}}]
    convs = [_conv(c, [_turn("user", "q"), _turn("model", "a", 2), _turn("model", "b", 1)], user_id=u)
             for c, u in (("c1", "u"), ("c2", "v"), ("c3", "w"))]
    _, items = _prism(tmp_path, convs, survey)
    assert items[0].profile == ("About me: teacher", "How an assistant should behave: be brief",
                                "What matters to me (0-100): values 40, safety 60, helpfulness 0")
    assert items[1].profile == ("What matters to me (0-100): values 5",)
    assert items[2].profile == ("How an assistant should behave: x",)


@pytest.mark.parametrize("conv, field, says", [
    (_conv("c", [_turn("user", "q"), _turn("model", "a", 1)], user_id="nobody"), "user_id", "user 'nobody' is not in the survey"),
    (_conv("c", [_turn("user", "q"), _turn("model", "a", 1), _turn("model", "b", None)]), "conversation_history[2].score",
     "expected a rating, got None"),
    (_conv("c", []), "conversation_history", "expected a non-empty list of turns"),
    (_conv("c", "text"), "conversation_history", "expected a non-empty list of turns"),
    (_conv("c", [_turn("user", "q"), "turn"]), "conversation_history[1]", "expected a turn object"),
    (_conv("c", [_turn("user", "q"), _turn("model", " ", 3)]), "conversation_history[1].content", "expected a non-empty string"),
    (_conv("c", [_turn("user", "q"), _turn("model", "a", True)]), "conversation_history[1].score", "expected a rating, got True"),
    (_conv("c", [_turn("user", "q"), _turn("model", "a", "high")]), "conversation_history[1].score", "expected a rating, got 'high'"),
    (_conv("c", [_turn("user", "q"), _turn("system", "a")]), "conversation_history[1].role", "expected user or model, got 'system'"),
    (_conv("c", [_turn("model", "a", 1), _turn("model", "b", 2)]), "conversation_history", "no user message in the opening turn"),
])
def test_prism_names_the_field_of_a_bad_conversation(tmp_path, conv, field, says):
    with pytest.raises(DataError) as exc:
        _prism(tmp_path, [conv])
    assert (exc.value.row, exc.value.field, exc.value.message) == (0, field, says)


def test_prism_refuses_a_survey_row_saying_nothing_and_a_folder_without_both_files(tmp_path):
    conv = _conv("c", [_turn("user", "q"), _turn("model", "a", 2), _turn("model", "b", 1)])
    with pytest.raises(DataError) as exc:
        _prism(tmp_path, [conv], [{"user_id": "u", "stated_prefs": {"values": None}}])
    assert (exc.value.field, exc.value.message) == (
        "self_description", "the survey row has no self_description, system_string or stated_prefs")
    with pytest.raises(DataError, match="field 'stated_prefs'.*expected an object of ratings, got list"):
        _prism(tmp_path, [conv], [{"user_id": "u", "stated_prefs": [1]}])
    from tasks.core.errors import ConfigError
    only = tmp_path / "only"
    only.mkdir()
    _write(only, "conversations.jsonl", [conv])
    with pytest.raises(ConfigError, match="no survey file under"):
        scoring.load("prism", {"source": "prism", "path": str(only)})


def test_prism_names_the_files_a_folder_lacks_and_reads_both_configs_from_the_hub(tmp_path, monkeypatch):
    from tasks.core.errors import ConfigError
    from tasks.stages.benchmarks.prism import Prism

    other = tmp_path / "other"
    other.mkdir()
    _write(other, "notes.jsonl", [{"a": 1}])
    with pytest.raises(ConfigError) as exc:
        scoring.load("prism", {"source": "prism", "path": str(other)})
    assert str(exc.value) == (f"benchmarks (prism): no survey or conversations file under '{other}' "
                              "(expected survey.jsonl and conversations.jsonl, or .json / .parquet)")
    monkeypatch.setattr(Prism, "hub_rows", lambda self, hub, config=None, split=None: iter([(hub, config)]))
    survey, conversations = Prism().raw_rows(None, None)
    assert (list(survey), list(conversations)) == ([(Prism.hub_id, "survey")], [(Prism.hub_id, "conversations")])
    survey, _ = Prism().raw_rows(None, "org/copy")
    assert list(survey) == [("org/copy", "survey")]
    assert Prism().metrics([], "strict")["left_out"] == 0, "nothing loaded: none left out (not unknown)"
