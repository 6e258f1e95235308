"""`dvc ARGS` with a stop at one boundary of its stages, for the crash tests (tests/test_release_crash.py
copies it into its toy project): `python dvc_hook.py POINT ARGS...`, POINT one of "before <stage>",
"ran <stage>" (its command done), "committed <stage>" (outputs in the cache), "after <stage>"
(dvc.lock written), "end". At POINT it writes its pid to the file `hanging` and waits to be killed."""
import os, pathlib, sys, time

def hold(here):
    if here == sys.argv[1]:
        pathlib.Path("hanging").write_text(str(os.getpid()))
        while True:
            time.sleep(1)

from dvc.repo import Repo, reproduce
from dvc.stage import Stage

real_reproduce, real_stage, real_run, real_commit, real_repo = (
    reproduce._reproduce, reproduce._reproduce_stage, Stage._run_stage, Stage.commit, Repo.reproduce)

def one_stage(stage, **kwargs):
    hold(f"before {stage.addressing}")
    out = real_stage(stage, **kwargs)
    hold(f"after {stage.addressing}")
    return out

def run(self, *args, **kwargs):
    out = real_run(self, *args, **kwargs)
    hold(f"ran {self.addressing}")
    return out

def commit(self, *args, **kwargs):
    out = real_commit(self, *args, **kwargs)
    hold(f"committed {self.addressing}")
    return out

def repo_reproduce(self, *args, **kwargs):
    out = real_repo(self, *args, **kwargs)
    hold("end")
    return out

reproduce._reproduce = lambda stages, **kwargs: real_reproduce(stages, repro_fn=one_stage, **kwargs)
Stage._run_stage, Stage.commit, Repo.reproduce = run, commit, repo_reproduce
from dvc.cli import main
sys.exit(main(sys.argv[2:]))
