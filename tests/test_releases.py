"""The release logic without Prefect: watch rules, what is new, RM names, the params edit that
keeps comments, the release note, and commits of only what a run changed."""
import subprocess

import pytest
import yaml

from tasks.ops import gitops, release_note, releases
from tasks.core.errors import ConfigError
from tasks.core.params_edit import flow_mapping, set_rm, with_rm
from tests.conftest import ROOT

R = releases.Release


def test_rules_are_checked_with_the_bad_key_named():
    assert releases.check_rules([{"source": "hub", "author": "acme"}, {"source": "local", "path": "x"}])
    with pytest.raises(ConfigError, match=r"releases.watch\[1\].source: .*'hub'"):
        releases.check_rules([{"source": "local", "path": "x"}, {"source": "hb", "author": "acme"}])
    with pytest.raises(ConfigError, match=r"releases.watch\[0\].autor: not an option of a hub rule.*'author'"):
        releases.check_rules([{"source": "hub", "autor": "acme"}])
    with pytest.raises(ConfigError, match=r"releases.watch\[0\]: a hub rule needs"):
        releases.check_rules([{"source": "hub", "limit": 5}])
    with pytest.raises(ConfigError, match=r"releases.watch\[0\].path: required"):
        releases.check_rules([{"source": "local"}])


def test_local_folder_releases_are_pinned_to_their_content(tmp_path):
    for name in ("rm-a", "rm-b"):
        (tmp_path / "in" / name).mkdir(parents=True)
        (tmp_path / "in" / name / "config.json").write_text('{"a": 1}')
    (tmp_path / "in" / "notes").mkdir()   # no config.json: not a checkpoint
    rule = {"source": "local", "path": "in"}
    found = releases.local_releases(rule, tmp_path)
    assert [r.model for r in found] == ["in/rm-a", "in/rm-b"]
    assert found[0].revision == found[1].revision and found[0].revision.startswith("tree:")
    (tmp_path / "in" / "rm-b" / "model.safetensors").write_bytes(b"weights")
    again = releases.local_releases(rule, tmp_path)
    assert again[0] == found[0] and again[1].revision != found[1].revision, "new content = a new revision"


def test_only_unregistered_revisions_are_new_oldest_first():
    found = [R("acme/new", "c3", "hub"), R("acme/rm", "b2", "hub"), R("acme/old", "a1", "hub")]   # newest first
    params = {"scoring": {"rms": {"old": {"kind": "seq-cls", "model": "acme/old", "revision": "a1"}}}}
    state = {"models": {"acme/rm": {"revision": "b1", "rm": "rm", "status": "scored"}}}
    new = releases.new_releases(found, releases.registered(params, state))
    assert new == [R("acme/rm", "b2", "hub"), R("acme/new", "c3", "hub")], "a new revision of a known model is new"
    releases.record(state, new[0], "rm", "announced")
    releases.record(state, new[1], "new", "announced")
    assert releases.new_releases(found, releases.registered(params, state)) == []


def test_state_survives_a_restart(tmp_path):
    path = tmp_path / "registered.json"
    assert releases.load_state(path) == {"models": {}}
    releases.save_state(releases.record(releases.load_state(path), R("acme/x", "s1", "hub"), "x", "announced"), path)
    assert releases.registered({}, releases.load_state(path)) == {("acme/x", "s1")}
    path.write_text("{broken")
    with pytest.raises(ConfigError, match="registered.json: not valid JSON"):
        releases.load_state(path)


def test_concurrent_writers_keep_each_others_records(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    path = tmp_path / "registered.json"
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: releases.update_state(path, R(f"acme/m{i}", f"s{i}", "hub"), f"m{i}", "announced"),
                      range(16)))
    assert sorted(releases.load_state(path)["models"]) == sorted(f"acme/m{i}" for i in range(16))


def test_rm_names_are_stable_and_never_collide():
    rms = {"tiny-rm": {"kind": "seq-cls", "model": "other/tiny-rm"}, "random": {"kind": "random"}}
    assert releases.rm_name("other/tiny-rm", rms) == "tiny-rm", "a known model keeps its name"
    assert releases.rm_name("acme/Tiny.RM", {}) == "tiny-rm"
    assert releases.rm_name("acme/tiny-rm", rms) == "acme-tiny-rm", "another model's name gets the org"
    assert releases.rm_name("acme/random", {**rms, "acme-random": {}}) == "acme-random-2"
    state = {"models": {"acme/q": {"rm": "q-rm"}}}
    assert releases.rm_name("acme/q", {}, state) == "q-rm", "an announced model keeps the announced name"


def test_rm_entry_pins_the_revision_over_defaults():
    entry = releases.rm_entry(R("acme/x", "abc", "hub"), {"kind": "seq-cls", "max_length": 512, "revision": "main"})
    assert entry == {"kind": "seq-cls", "max_length": 512, "model": "acme/x", "revision": "abc"}


def test_params_edit_adds_one_line_and_keeps_every_comment():
    text = (ROOT / "params.yaml").read_text()
    entry = {"kind": "seq-cls", "model": "acme/tiny-rm", "revision": "1234e5678"}
    new = with_rm(text, "tiny-rm", entry, comment="released acme/tiny-rm")
    old_lines, new_lines = text.splitlines(), new.splitlines()
    assert len(new_lines) == len(old_lines) + 1
    added = [line for line in new_lines if line not in old_lines]
    assert added == ['    tiny-rm: {kind: seq-cls, model: acme/tiny-rm, revision: "1234e5678"}   # released acme/tiny-rm']
    expected = yaml.safe_load(text)
    expected["scoring"]["rms"]["tiny-rm"] = entry
    assert yaml.safe_load(new) == expected
    # a new version replaces the RM's own line, nothing else
    newer = with_rm(new, "tiny-rm", {**entry, "revision": "ffff"})
    assert len(newer.splitlines()) == len(new_lines)
    assert yaml.safe_load(newer)["scoring"]["rms"]["tiny-rm"]["revision"] == "ffff"


def test_a_sha_that_looks_like_a_number_stays_a_string_for_dvc():
    from ruamel.yaml import YAML   # DVC's reader: YAML 1.2, where 1234e5 is a float

    line = flow_mapping({"model": "acme/x", "revision": "1234e5"})
    assert YAML(typ="safe").load(line)["revision"] == "1234e5"


def test_params_edit_refuses_what_it_cannot_do_in_one_line(tmp_path):
    text = "scoring:\n  rms:\n    big:\n      kind: seq-cls\n      model: acme/big\n# end\n"
    with pytest.raises(ConfigError, match="scoring.rms.big spans several lines"):
        with_rm(text, "big", {"kind": "seq-cls", "model": "acme/big", "revision": "x"})
    with pytest.raises(ConfigError, match="no top-level `scoring:`"):
        with_rm("common:\n  seed: 1\n", "x", {"kind": "random"})
    assert yaml.safe_load(with_rm(text, "new", {"kind": "random"}))["scoring"]["rms"]["new"] == {"kind": "random"}
    path = tmp_path / "params.yaml"
    path.write_text("scoring:\n  rms: {a: {kind: random}}   # inline: not one entry per line\n")
    before = path.read_bytes()
    with pytest.raises(ConfigError):
        set_rm(path, "b", {"kind": "random"})
    assert path.read_bytes() == before, "nothing written when the edit cannot be verified"


def _row(rm, acc, strategy="raw_profile", domain="micro"):
    return {"rm": rm, "strategy": strategy, "domain": domain, "accuracy": acc, "ci_low": acc - 0.1,
            "ci_high": acc + 0.1, "n": 12}


def test_release_note_ranks_and_compares_with_the_previous_version(tmp_path):
    before = [_row("a", 0.7), _row("x", 0.5), _row("b", 0.6)]
    after = [_row("a", 0.7), _row("x", 0.75), _row("b", 0.6), _row("x", 0.1, strategy="none"), _row("x", 0.2, domain="d")]
    s = release_note.summary(before, after, "x", "raw_profile")
    assert (s["rank"], s["of"], s["previous_rank"]) == (1, 3, 3)
    assert s["change"] == pytest.approx(0.25)
    text = release_note.markdown(s, "acme/x", "abc123", report=tmp_path / "missing.html")
    assert text.startswith("**x**: accuracy 0.750 [0.650, 0.850], rank 1 of 3; change vs previous version: +0.250")
    assert "report page" not in text
    (tmp_path / "index.html").write_text("<html></html>")
    assert (tmp_path / "index.html").as_uri() in release_note.markdown(s, "acme/x", "abc", report=tmp_path / "index.html")
    fresh = release_note.summary([_row("a", 0.7)], after, "x", "raw_profile")
    assert fresh["previous_accuracy"] is None
    assert "none (new on the board)" in release_note.markdown(fresh, "acme/x", "abc")


def _repo(tmp_path):
    def g(*args):
        return subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True, text=True).stdout
    g("init", "-q", "-b", "main")
    g("config", "user.email", "t@localhost")
    g("config", "user.name", "t")
    (tmp_path / "params.yaml").write_text("a: 1\n")
    (tmp_path / "mine.txt").write_text("user's\n")
    g("add", "-A")
    g("commit", "-q", "-m", "init")
    return g


def test_commits_only_what_the_run_changed(tmp_path):
    g = _repo(tmp_path)
    (tmp_path / "mine.txt").write_text("user's uncommitted edit\n")   # before the run: never swept in
    before = gitops.snapshot(tmp_path)
    (tmp_path / "params.yaml").write_text("a: 2\n")
    (tmp_path / "metrics.json").write_text("{}\n")
    paths = gitops.changed(tmp_path, before)
    assert paths == ["metrics.json", "params.yaml"]
    sha = gitops.commit(tmp_path, paths, "run: x")
    assert g("show", "--name-only", "--format=%s", sha).split() == ["run:", "x", "metrics.json", "params.yaml"]
    assert g("status", "--porcelain").strip() == "M mine.txt"


def test_commits_to_another_branch_leave_the_checkout_alone(tmp_path):
    g = _repo(tmp_path)
    head = g("rev-parse", "HEAD").strip()
    (tmp_path / "params.yaml").write_text("a: 3\n")
    sha = gitops.commit(tmp_path, ["params.yaml"], "score-rm: x", branch="releases")
    assert g("rev-parse", "HEAD").strip() == head and g("rev-parse", "releases").strip() == sha
    assert g("show", "releases:params.yaml") == "a: 3\n"
    assert g("rev-parse", "releases^").strip() == head
    assert g("status", "--porcelain").strip() == "M params.yaml", "working tree and index untouched"
