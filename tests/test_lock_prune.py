"""dvc.lock holds the current stages only: DVC rewrites the whole file after every stage, so entries of
stages that left dvc.yaml (an RM removed, one rl.rms no longer lists) slow every later stage; `prbench run`
drops them (tasks/ops/lock_prune.py)."""
import shutil

import yaml

from tasks.ops.lock_prune import prune, stage_names
from tests.conftest import ROOT

SHIPPED = yaml.safe_load((ROOT / "params.yaml").read_text())


def test_the_committed_lock_has_an_entry_for_each_stage_and_no_other():
    locked = set(yaml.safe_load((ROOT / "dvc.lock").read_text())["stages"])
    assert locked == stage_names(SHIPPED)
    assert "rl_train@random" not in locked and "rl_train@length-shorter" in locked, "rl_train: the rl.rms list only"


def test_a_stale_entry_is_dropped_and_the_rest_kept_as_dvc_wrote_it(tmp_path):
    import copy

    from dvc.utils.serialize import dumps_yaml, parse_yaml_for_update

    text = (ROOT / "dvc.lock").read_text()
    data = parse_yaml_for_update(text, "dvc.lock")
    data["stages"]["score@removed-rm"] = copy.deepcopy(data["stages"]["score@random"])   # as DVC would have left it
    (tmp_path / "dvc.lock").write_text(dumps_yaml(data))
    assert prune(tmp_path, SHIPPED) == ["score@removed-rm"]
    assert (tmp_path / "dvc.lock").read_text() == text, "the kept entries byte for byte"
    assert prune(tmp_path, SHIPPED) == [] and (tmp_path / "dvc.lock").read_text() == text


def test_removing_an_rm_from_rl_rms_drops_its_entry(tmp_path):
    shutil.copy(ROOT / "dvc.lock", tmp_path / "dvc.lock")
    params = {**SHIPPED, "rl": {**SHIPPED["rl"], "rms": []}}
    assert prune(tmp_path, params) == [f"rl_train@{rm}" for rm in SHIPPED["rl"]["rms"]]
    assert not any(k.startswith("rl_train@") for k in yaml.safe_load((tmp_path / "dvc.lock").read_text())["stages"])


def test_a_lock_of_another_shape_is_pruned_by_a_yaml_round_trip(tmp_path):
    """A hand-edited lock (a comment among the entries) is no plain lock for the key-line reader."""
    text = LOCK_WITH_COMMENT = "schema: '2.0'\nstages:\n  # kept\n  ingest:\n    cmd: a\n  score@removed-rm:\n    cmd: b\n"
    (tmp_path / "dvc.lock").write_text(LOCK_WITH_COMMENT)
    assert prune(tmp_path, SHIPPED) == ["score@removed-rm"]
    left = yaml.safe_load((tmp_path / "dvc.lock").read_text())["stages"]
    assert list(left) == ["ingest"] and text != (tmp_path / "dvc.lock").read_text()
