"""`make committed-run`'s own checks (docs/determinism.md#the-committed-run-make-committed-run): a checkout with
uncommitted changes outside the run paths (dvc.lock, metrics/, plots/, report/index.html) is refused, a file
that only shares a run path's prefix included; a run that leaves any other file behind, a new untracked one
included, is not copied back."""
from __future__ import annotations

import io
import subprocess

import pytest

from tests.test_committed_run import MAKEFILE, _project, _state


def test_a_file_sharing_a_run_paths_prefix_is_not_a_run_file(tmp_path):
    from tasks.core.errors import ConfigError
    from tasks.ops import committed_run

    assert committed_run._under("metrics/a.json") and committed_run._under("report/index.html")
    assert not committed_run._under("metrics_notes.md") and not committed_run._under("report/other.html")
    root = _project(tmp_path)
    (root / "metrics_notes.md").write_text("notes\n")
    subprocess.run(["git", "add", "metrics_notes.md"], cwd=root, check=True)
    before = _state(root)
    with pytest.raises(ConfigError, match=r"uncommitted changes in metrics_notes.md: commit them first"):
        committed_run.make(root, out=io.StringIO(), err=io.StringIO())
    assert _state(root) == before


def test_a_run_that_leaves_a_new_file_outside_the_run_paths_is_not_copied(tmp_path, monkeypatch):
    from tasks.ops import committed_run, lock_check

    root = _project(tmp_path, MAKEFILE + "\techo left > scratch.txt\n")
    monkeypatch.setattr(lock_check, "problems", lambda clone: [])
    before, err = _state(root), io.StringIO()
    assert committed_run.make(root, out=io.StringIO(), err=err) == 1
    assert "the run changed scratch.txt, which the committed run does not hold" in err.getvalue()
    assert _state(root) == before


def test_a_run_file_moved_out_of_the_run_paths_is_refused_by_its_new_name(tmp_path):
    from tasks.core.errors import ConfigError
    from tasks.ops import committed_run

    root = _project(tmp_path)
    subprocess.run(["git", "mv", "metrics/old.json", "notes.json"], cwd=root, check=True)   # status: "old -> new"
    before = _state(root)
    with pytest.raises(ConfigError, match=r"uncommitted changes in metrics/old.json -> notes.json: commit them first"):
        committed_run.make(root, out=io.StringIO(), err=io.StringIO())
    assert _state(root) == before
