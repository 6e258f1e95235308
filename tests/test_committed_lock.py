"""The committed run matches the committed code: every dependency dvc.lock records that git holds (code, params,
prompts, the bundled sample) hashes now as the lock says, at HEAD. A commit that changes code without the run it
changes leaves a fresh clone's `dvc repro` with work to do, and the page's code version stale (this happened once:
the report stage's `tasks` hash missed a file added after the run was made)."""
import pytest

from tests.conftest import ROOT


@pytest.mark.skipif(not (ROOT / ".git").exists(), reason="needs the git checkout (HEAD's tree)")
def test_every_git_held_dependency_in_the_committed_lock_matches_head():
    from dvc.repo import Repo

    repo = Repo(str(ROOT), rev="HEAD")   # git's tree at HEAD, not the work tree: edits in progress do not count
    try:
        outs = {str(o.fs_path) for s in repo.index.stages for o in s.outs}

        def produced(path: str) -> bool:   # a stage's output, or a folder holding some: data, checked elsewhere
            return path in outs or any(o.startswith(path + "/") or path.startswith(o + "/") for o in outs)

        checked, stale = 0, []
        for stage in repo.index.stages:
            for dep in stage.deps:
                if produced(str(dep.fs_path)):
                    continue
                checked += 1
                if dep.status():
                    stale.append(f"{stage.addressing}: {dep.def_path}")
    finally:
        repo.close()
    assert checked > 100, checked   # the code and params deps of every stage were seen
    assert not stale, ("dvc.lock at HEAD is stale for these deps (run `make run` in a fresh clone and commit its "
                       "dvc.lock and outputs): " + "; ".join(stale))
