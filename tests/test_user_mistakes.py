"""Mistakes a new user makes that nobody listed before issue 60, each of a kind the issue names: an option
that one mode ignores (`run --params` without --no-dvc), a kind that needs a model written without one, a port
in use, a reference matching nothing (a name or a pattern), a path that is not there, an empty list where an
item is needed, a name no stage can use as a file name, an environment variable the docs name set to
nonsense, a file where a folder is expected and the reverse, a misspelt `--targets` path. Each goes through
the real entry point (`flows.cli.main`, the function the `prbench` script calls, or the script itself where
the environment is read at start-up) in a project folder of its own, and gets one line on stderr naming the
key, flag, file or variable, a non-zero exit and no traceback, before any work: `prbench run` and
`prbench serve` never reach DVC or a Prefect server (both are replaced here by a tripwire)."""
import os
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from flows.cli import main
from tests.conftest import ROOT

TEXT = (ROOT / "params.yaml").read_text()
PRBENCH = Path(sys.executable).parent / "prbench"


def edit(old: str, new: str) -> str:
    assert TEXT.count(old) >= 1, old
    return TEXT.replace(old, new, 1)


RMS_END = "    random: {kind: random}\n"
STRATEGIES = "  strategies:\n  - none\n  - raw_profile\n  - planner\n  - oracle\n"


def add_rm(line: str) -> str:
    return edit(RMS_END, RMS_END + f"    {line}\n")


@dataclass
class Mistake:
    argv: list
    names: str                       # what the one line must name (the key, flag, file or variable)
    params: str = TEXT               # params.yaml of the project
    env: dict = field(default_factory=dict)
    script: bool = False             # through the installed `prbench` script (read at start-up: the environment)
    folders: tuple = ()              # folders made in the project first


MISTAKES = {
    # an option one mode ignores
    "run --params without --no-dvc": Mistake(["run", "--params", "my.yaml"], "--params"),
    "run --until without --no-dvc": Mistake(["run", "--until", "pairs"], "--until"),
    "run --no-dvc with a target": Mistake(["run", "--no-dvc", "ingest"], "ingest"),
    "run --no-dvc with --jobs": Mistake(["run", "--no-dvc", "--jobs", "2"], "--jobs"),
    "serve --port beside PREFECT_API_URL": Mistake(["serve", "--port", "4391"], "--port",
                                                   env={"PREFECT_API_URL": "http://127.0.0.1:9/api"}),
    "score --data-revision on our pairs": Mistake(["score", "--kind", "random", "--data-revision", "v1"],
                                                  "--data-revision"),
    "report --params with --compare": Mistake(["report", "--compare", "HEAD", "--params", "my.yaml"], "--params"),
    "params FILE with --doc": Mistake(["params", "my.yaml", "--doc"], "my.yaml"),
    "dag --write with --outputs": Mistake(["dag", "--write", "--outputs"], "--write"),
    # a kind's required option left out
    "a seq-cls RM without a model": Mistake(["params"], "scoring.rms.my-rm.model", add_rm("my-rm: {kind: seq-cls}")),
    "an internlm2 RM without trust_remote_code": Mistake(
        ["params"], "scoring.rms.ilm.trust_remote_code",
        add_rm("ilm: {kind: internlm2-reward, model: internlm/internlm2-7b-reward}")),
    # a port in use
    "serve --port that is in use": Mistake(["serve", "--port", "{busy}"], "--port"),
    # a reference matching nothing
    "a primary-test pattern matching no RM": Mistake(["params"], "correlation.primary.rms[0]",
                                                     edit("  - ladder-*", "  - ladr-*")),
    "a heatmap of a strategy not scored": Mistake(["params"], "leaderboard.heatmap_strategy", edit(
        STRATEGIES, STRATEGIES.replace("  - planner\n", "")).replace("heatmap_strategy: raw_profile",
                                                                     "heatmap_strategy: planner")),
    "a leaderboard split not scored": Mistake(["params"], "leaderboard.split",
                                              edit("  split: test ", "  split: train")),
    "a misspelt run target": Mistake(["run", "leaderbaord"], "leaderbaord"),
    "a run target of an RM that is not one": Mistake(["run", "score@nosuch"], "score@nosuch"),
    # a path that is not there
    "an RL policy file that is not there": Mistake(["params"], "rl.policy.model",
                                                   edit("    model: embedded:smollm2-135m\n    revision:", "    model: ./models/policy.gguf\n    revision:")),
    "a retrieval encoder folder that is not there": Mistake(["params"], "profiles.encoder", edit(
        "encoder: embedded:all-MiniLM-L6-v2   # any HF", "encoder: ./encoders/contriever   # any HF")),
    "an embedded model that does not exist": Mistake(["params"], "train_rm.backbone", edit(
        "backbone: embedded:all-MiniLM-L6-v2", "backbone: embedded:all-MiniLM-L12-v2")),
    # an empty list where one item is needed
    "no profile strategy": Mistake(["params"], "scoring.strategies", edit(STRATEGIES, "  strategies: []\n")),
    "no LaMP-QA config": Mistake(["params"], "ingest.configs", edit(
        "  configs:\n  - Art_and_Entertainment\n  - Lifestyle_and_Personal_Development\n  - Society_and_Culture\n",
        "  configs: []\n")),
    "no downstream method": Mistake(["params"], "correlation.downstream",
                                    edit("  downstream:\n  - bon\n  - rl\n", "  downstream: []\n")),
    # a name no stage can use as a file name
    "an RM name with a space": Mistake(["params"], "scoring.rms.my rm", add_rm("my rm: {kind: random}")),
    "an RM name with a dot": Mistake(["params"], "scoring.rms.qwen2.5", add_rm("qwen2.5: {kind: random}")),
    "a benchmark name with a slash": Mistake(["params"], "benchmarks.rb2/demo", edit("  rb2-demo:", "  rb2/demo:")),
    "release score --name with a slash": Mistake(["release", "score", "org/model", "--name", "my/rm"], "--name"),
    # an environment variable the docs name, set to nonsense
    "PRBENCH_TORCH_THREADS not a number": Mistake(["params"], "PRBENCH_TORCH_THREADS",
                                                  env={"PRBENCH_TORCH_THREADS": "two"}, script=True),
    "HF_HUB_OFFLINE neither true nor false": Mistake(["params"], "HF_HUB_OFFLINE", env={"HF_HUB_OFFLINE": "maybe"}),
    "PREFECT_API_URL not a URL": Mistake(["release", "check"], "PREFECT_API_URL", env={"PREFECT_API_URL": "localhost"}),
    "PRBENCH_NUMERICS_REPLACED not JSON": Mistake(["params"], "PRBENCH_NUMERICS_REPLACED",
                                                  env={"PRBENCH_NUMERICS_REPLACED": "MKL_CBWR=AUTO"}, script=True),
    "PREFECT_HOME a file": Mistake(["run"], "PREFECT_HOME", env={"PREFECT_HOME": "params.yaml"}, script=True),
    # a file where a folder is expected, and the reverse
    "a prompt that is a folder": Mistake(["params"], "rubrics.prompt",
                                         edit("prompt: prompts/planner.txt", "prompt: prompts")),
    "a cache folder that is a file": Mistake(["params"], "common.cache_dir",
                                             edit("cache_dir: .prbench-cache ", "cache_dir: params.yaml  ")),
    "score --out a file": Mistake(["score", "--kind", "random", "--data", "data/sample/rewardbench", "--out",
                                   "params.yaml"], "--out"),
    "report --out a folder": Mistake(["report", "--out", "pages"], "--out", folders=("pages",)),
    "human-eval export --out a file": Mistake(["human-eval", "export", "--out", "params.yaml"], "--out"),
    "human-eval check of a file": Mistake(["human-eval", "check", "params.yaml"], "params.yaml"),
    # a misspelt --targets path
    "diff --targets misspelt": Mistake(["diff", "HEAD", "--targets", "metrics/leaderbord.json"],
                                       "metrics/leaderbord.json"),
}


def project(tmp_path: Path, m: Mistake) -> Path:
    """A project folder: the edited params.yaml (also as my.yaml), the repo's prompts, data and metrics."""
    (tmp_path / "params.yaml").write_text(m.params)
    (tmp_path / "my.yaml").write_text(m.params)
    for name in ("prompts", "data", "metrics", "dvc.yaml", "params-paper.yaml", "params-regenerate.yaml"):
        (tmp_path / name).symlink_to(ROOT / name)
    for name in m.folders:
        (tmp_path / name).mkdir()
    return tmp_path


class WorkStarted(Exception):
    """Raised where a run's work would begin: a mistake must be refused before this."""


@pytest.fixture
def tripwires(monkeypatch):
    import flows.deploy
    import flows.run_dvc
    import flows.server

    def trip(*args, **kwargs):
        raise WorkStarted("work began before the mistake was refused")
    for module, name in ((flows.run_dvc, "run_dvc"), (flows.server, "start"), (flows.deploy, "serve")):
        monkeypatch.setattr(module, name, trip)


@pytest.fixture
def busy_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def attempt(tmp_path, m: Mistake, capsys, monkeypatch, busy: int) -> tuple[int, str, str]:
    cwd = project(tmp_path, m)
    argv = [a.replace("{busy}", str(busy)) for a in m.argv]
    if m.script:
        env = {**os.environ, **m.env, "PYTHONPATH": str(ROOT)}
        proc = subprocess.run([str(PRBENCH), *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
        return proc.returncode, proc.stdout, proc.stderr
    monkeypatch.chdir(cwd)
    for k, v in m.env.items():
        monkeypatch.setenv(k, v)
    try:
        rc = main(argv)
    except SystemExit as exc:
        rc = exc.code
    out = capsys.readouterr()
    return rc, out.out, out.err


@pytest.mark.parametrize("case", sorted(MISTAKES))
def test_each_mistake_is_one_clear_line(tmp_path, capsys, monkeypatch, tripwires, busy_port, case):
    m = MISTAKES[case]
    rc, out, err = attempt(tmp_path, m, capsys, monkeypatch, busy_port)
    lines = err.strip().splitlines()
    assert rc not in (0, None), (out[-2000:], err[-2000:])
    assert "Traceback" not in out + err, err[-3000:]
    assert len(lines) == 1, err[-3000:]
    assert m.names in lines[0], lines[0]


def test_there_are_at_least_twenty():
    assert len(MISTAKES) >= 20


def test_a_run_while_another_holds_the_dvc_lock_is_one_line(tmp_path, capsys, monkeypatch, tripwires):
    """DVC's lock (.dvc/tmp/lock, an flock(2)) held by another run: said before a server starts, not by DVC after."""
    import fcntl

    cwd = project(tmp_path, Mistake(["run"], ""))
    (cwd / ".dvc" / "tmp").mkdir(parents=True)
    with open(cwd / ".dvc" / "tmp" / "lock", "w") as held:
        held.write(" 4242\n")
        held.flush()
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        monkeypatch.chdir(cwd)
        rc = main(["run"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 1 and err == [".dvc/tmp/lock: another dvc process (pid 4242) holds this project's lock (a `prbench "
                               "run`, `dvc repro` or `dvc exp run`); wait for it to end, or stop it"], err


def test_a_stage_command_refuses_a_nonsense_variable_in_one_line(tmp_path):
    """`python -m flows.stage` (what dvc runs) reads the environment at start-up, before the numerics pin."""
    cwd = project(tmp_path, Mistake([], ""))
    env = {**os.environ, "PRBENCH_TORCH_THREADS": "two", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "flows.stage", "ingest"], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 1 and proc.stderr.strip().splitlines() == [
        "PRBENCH_TORCH_THREADS: 'two' is not allowed: a whole number >= 1 (an environment variable, "
        "docs/determinism.md: fix or unset it)"], proc.stderr
