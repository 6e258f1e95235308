"""A temp copy of the repo with tiny params (the dummy LLM everywhere, cheap RMs, a small BoN),
committed to a git repo of its own, for tests of `prbench run`, `prbench serve` and the release flow."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from tests.stage_project import DUMMY

VENV_BIN = str(Path(sys.executable).parent)
# `prbench` in a copy: the console script would import the editable install's flows/ (this checkout),
# `python -m` with the copy as cwd imports the copy's, as the stage processes DVC starts there do
PRBENCH = [sys.executable, "-m", "flows.cli"]
TINY_RMS = {"length-longer": {"kind": "length-longer"}, "length-shorter": {"kind": "length-shorter"},
            "random": {"kind": "random"}}


def tiny_params(params: dict) -> dict:
    params["ingest"]["limit_per_split"] = 3
    params["profiles"]["retriever"] = "bm25"
    params["llms"]["test-llm"] = dict(DUMMY)
    params["pairs"]["generate_per_domain"] = 1
    for stage, key in (("rubrics", "llm"), ("pairs", "llm"), ("generic_pairs", "llm"), ("human_eval", "proxy_llm"),
                       ("bon", "policy_llm")):
        params[stage][key] = "test-llm"
    params["human_eval"]["proxy_limit"] = 1
    params["train_rm"]["splits"] = []     # no trained RM: its training is the slowest stage and not under test here
    params["scoring"]["per_domain_limit"] = 2
    rms = params["scoring"]["rms"]
    for name in [n for n in rms if n not in TINY_RMS]:   # in place: the file's own lines and comments stay
        del rms[name]
    if params["correlation"].get("primary", {}).get("rms"):   # no ladder left: the primary test over these RMs
        params["correlation"]["primary"]["rms"] = ["*"]
    params["bon"].update(questions_limit=1, n=2, max_k=2, bootstrap=100)
    params["leaderboard"]["bootstrap"] = 100
    params["correlation"].update(bootstrap=100, permutations=99)
    if "rl" in params:   # no RL training (no rl_train stage at all); the untrained policy is evaluated
        params["rl"]["rms"] = []
        params["rl"]["eval"].update(questions_limit=1, max_tokens=8, bootstrap=100)
    return params


def env(**extra) -> dict:
    """A child's environment: this venv first on PATH, no PYTHONPATH (the copy's code, not ours)."""
    e = {**os.environ, "PATH": VENV_BIN + os.pathsep + os.environ.get("PATH", ""), **extra}
    e.pop("PYTHONPATH", None)
    return e


def git(repo: Path, *args) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def make_repo(dst: Path, edit=None) -> Path:
    """Copy the repo (tracked and untracked-not-ignored files), shrink its params.yaml with a
    comment-keeping YAML round trip (so the release flow edits a commented file), commit."""
    from ruamel.yaml import YAML

    from tests.test_dvc import _copy_repo

    dst.mkdir(parents=True, exist_ok=True)
    _copy_repo(dst)
    rt = YAML()
    rt.width, rt.preserve_quotes = 4096, True
    rt.indent(mapping=2, sequence=4, offset=2)
    params = rt.load((dst / "params.yaml").read_text())
    tiny_params(params)
    if "rl" in params:   # the untrained policy rl_eval runs: a tiny random Llama, not SmolLM2's ~1 min GGUF conversion
        from tests.test_llm_transformers import build_tiny_llama

        params["rl"]["policy"]["model"] = str(build_tiny_llama(dst.parent / "tiny-policy", max_positions=4096))
    if edit:
        edit(params)
    with open(dst / "params.yaml", "w") as fh:
        rt.dump(params, fh)
    git(dst, "add", "-A")
    git(dst, "-c", "user.name=test", "-c", "user.email=test@localhost", "commit", "-q", "-m", "tiny project")
    git(dst, "config", "user.name", "test")
    git(dst, "config", "user.email", "test@localhost")
    return dst


RETRYABLE = (429, 502, 503)   # the codes Prefect's own client retries: 503 is its server's "database busy"


def prefect_api(url: str, route: str, body=None, method: str | None = None, timeout: float = 60, tries: int = 6):
    """One call to a Prefect server's REST API, retried with backoff on the codes its own client
    retries (a busy SQLite answers 503 while runs write to it)."""
    data = None if body is None else json.dumps(body).encode()
    for attempt in range(tries):
        req = urllib.request.Request(f"{url}/{route}", data=data, method=method or ("POST" if data else "GET"),
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                text = r.read()
            return json.loads(text) if text else None
        except urllib.error.HTTPError as e:
            if e.code not in RETRYABLE or attempt == tries - 1:
                raise
            time.sleep(2 ** attempt)


def children(pid: int) -> list[int]:
    """Direct children of `pid` (from /proc)."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(d.name))
    return out


def cmdline(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def group_members(pgid: int) -> list[int]:
    """Live processes of process group `pgid` (from /proc; zombies are gone already)."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                out.append(int(d.name))
    return out


def wait_for(predicate, timeout: float, step: float = 0.5, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def kill_group(proc: subprocess.Popen) -> None:
    """End a test's child and everything in its process group (it was started with start_new_session)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
