"""The deployments `prbench serve` runs from one process, against a real Prefect server:

- `reproduce`: `dvc repro` on a cron (params `releases.reproduce_cron` or --cron); commits what it changed.
- `watch-releases`: on a cron, runs the watch rules (params `releases.watch`) and emits one
  `prbench.rm.released` event per model at a revision not yet registered.
- `score-rm`: triggered by that event (an automation), or run by hand with a model and revision:
  adds the RM pinned at its revision to params.yaml, `dvc repro` (only its stages and the reports
  run), commits params, dvc.lock and metrics, and writes a release note artifact.

Runs that change the repo hold one lock (tasks/ops/repo_lock.py: a flock in the git dir, dropped by the
kernel when its holder dies), so a second run waits, saying for whom, instead of failing; watcher
runs hold a lock of their own. A score-rm that dies midway is rolled back and scored again by the
next score-rm, reproduce or serve start (tasks/ops/release_txn.py). Logic lives in tasks/."""
from __future__ import annotations

import re
import time
from pathlib import Path

from prefect import flow, get_run_logger
from prefect import serve as prefect_serve
from prefect.artifacts import create_markdown_artifact
from prefect.events import DeploymentEventTrigger, emit_event
from prefect.runtime import flow_run
from prefect.states import Failed

from flows.common import RUN_TAGS
from tasks.ops import gitops, release_note, release_score, releases, repo_lock
from tasks.core import layout
from tasks.core.artifacts import read_table
from tasks.ops.params import load_params
from tasks.ops.repro import dvc

PARAMS = "params.yaml"
STATE = layout.RELEASES["state"]
REPORT = Path("report/index.html")   # the report stage's page, linked from release notes when present


def _repro(targets=()):
    """`dvc repro`; its stage runs are tagged with this run (`prbench:<run name>`), to find them in the UI."""
    logger = get_run_logger()
    return dvc(".", "repro", *targets, log=logger.info, env={RUN_TAGS: f"prbench:{flow_run.name}"})


@flow(name="reproduce", flow_run_name="reproduce", log_prints=True)
def reproduce_flow(targets: list[str] | None = None):
    """`dvc repro` (all stages, or `targets`); commit the files it changed, nothing else."""
    branch = load_params(PARAMS)["releases"].get("branch")
    logger = get_run_logger()
    with repo_lock.held(".", "dvc", "reproduce", log=logger.info, on_wait=_waiting):
        # a release a dead run left half-done is put back and scored first: never committed as "reproduce"
        release_score.recover_and_rescore(".", _repro, releases.prefetch, log=logger.info)
        before = gitops.snapshot(".")
        result = _repro(targets or [])
        if result.rc != 0:
            return Failed(message=f"dvc repro failed: {result.error()}")
        paths = gitops.changed(".", before)
        sha = gitops.commit(".", paths, f"reproduce: dvc repro ({', '.join(result.ran)})", branch) if paths else None
    print(f"ran {result.ran or 'nothing (up to date)'}; committed {paths or 'nothing'}")
    return {"ran": result.ran, "committed": paths, "commit": sha}


@flow(name="watch-releases", flow_run_name="watch-releases", log_prints=True)
def watch_releases_flow():
    """One `prbench.rm.released` event per new release; recorded at once, so none is announced twice."""
    announced = []
    # one watcher run at a time (a cron run and one by hand): the second sees the first's records
    with repo_lock.held(".", "watch", "watch-releases", log=get_run_logger().info, on_wait=_waiting):
        params = load_params(PARAMS)
        rules = releases.check_rules(params["releases"].get("watch") or [])
        state = releases.load_state(STATE)
        new = releases.new_releases(releases.find_releases(rules), releases.registered(params, state))
        for release in new:
            name = releases.rm_name(release.model, params["scoring"]["rms"], state)
            state = releases.update_state(STATE, release, name, "announced")   # recorded first: never twice
            emit_event(releases.EVENT, resource={"prefect.resource.id": f"prbench.rm.{name}",
                                                 "prefect.resource.name": release.model},
                       payload=release.event_payload(name))
            print(f"released: {release.model}@{release.revision} -> scoring.rms.{name}")
            announced.append(release.event_payload(name))
    if not announced:
        print("no new releases")
    return announced


def _score_run_name() -> str:
    p = flow_run.parameters
    return f"score-rm-{p.get('name') or Path(p['model']).name}@{str(p['revision'])[:10]}"


def _board() -> list[dict]:
    path = Path(layout.LEADERBOARD["leaderboard"])
    return read_table(path, "leaderboard").to_pylist() if path.exists() else []


def _fail(release, name: str, message: str):
    releases.update_state(STATE, release, name, "failed", message)
    get_run_logger().error(message)
    return Failed(message=message)


def _waiting(who) -> None:
    """A run queued behind another: its state says so (name "Waiting", the holder in the message)."""
    from prefect.client.orchestration import get_client
    from prefect.states import Running

    run_id = flow_run.id
    if not run_id:
        return
    state = Running(name="Waiting", message=f"waiting for {repo_lock.describe(who)}") if who else Running()
    try:
        with get_client(sync_client=True) as client:
            client.set_flow_run_state(run_id, state, force=True)
    except Exception as exc:   # the state is for people; the wait itself goes on regardless
        get_run_logger().warning(f"could not set the waiting state: {exc}")


@flow(name="score-rm", flow_run_name=_score_run_name, log_prints=True)
def score_rm_flow(model: str, revision: str, name: str = "", source: str = "hub"):
    """Score one released RM at its exact revision, as one commit or none (tasks/ops/release_score.py).
    Every file is downloaded and the RM built before params are touched; a failure changes nothing."""
    params = load_params(PARAMS)
    rel = params["releases"]
    release = releases.Release(model=model, revision=revision, source=source)
    name = name or releases.rm_name(model, params["scoring"]["rms"], releases.load_state(STATE))
    entry = releases.rm_entry(release, rel.get("entry"))
    where = f"score-rm {model}@{revision}"
    taken = params["scoring"]["rms"].get(name)
    if isinstance(taken, dict) and taken.get("model") != model:
        other = taken.get("model") or taken.get("kind")
        return _fail(release, name, f"{where}: scoring.rms.{name} is another model ({other}); pass another name")
    board = _board()
    try:
        out = release_score.score(".", release, name, entry, repro=_repro, prefetch=releases.prefetch,
                                  branch=rel.get("branch"), log=get_run_logger().info, on_wait=_waiting)
    except release_score.ReleaseFailed as exc:
        return _fail(release, name, str(exc))
    if out.status != "scored":
        print(f"{where}: {out.status}")
        return {"rm": name, "status": out.status}
    note = release_note.summary(board, _board(), name, rel["rank_strategy"])
    create_markdown_artifact(key=f"release-{re.sub(r'[^a-z0-9-]+', '-', name.lower())}",
                             markdown=release_note.markdown(note, model, revision, REPORT),
                             description=f"{name}: {model}@{revision}")
    print(release_note.markdown(note, model, revision, REPORT).splitlines()[0])
    return {"rm": name, "ran": out.ran, "committed": out.committed, "commit": out.commit, **note}


def deployments(params: dict, cron: str | None = None, watch_cron: str | None = None) -> list:
    rel = params["releases"]
    trigger = DeploymentEventTrigger(
        name="score each released RM", expect={releases.EVENT}, match={"prefect.resource.id": "prbench.rm.*"},
        parameters={k: "{{ event.payload.%s }}" % k for k in ("model", "revision", "name", "source")})
    return [
        reproduce_flow.to_deployment("reproduce", cron=cron or rel.get("reproduce_cron"),
                                     description="dvc repro on a schedule; commits only what it changed"),
        watch_releases_flow.to_deployment("watch-releases", cron=watch_cron or rel.get("watch_cron"),
                                          description="emit prbench.rm.released for each new RM release"),
        score_rm_flow.to_deployment("score-rm", triggers=[trigger],
                                    description="add a released RM at its revision, dvc repro, commit"),
    ]


def recover_at_start(log=print) -> list:
    """Releases dead runs left unfinished: rolled back now (main as before), returned to be rescored."""
    try:
        gitops.git(".", "rev-parse", "--git-dir")
    except gitops.GitError:
        log("prbench serve: not a git repo; score-rm and reproduce will fail at their commit")
        return []
    with repo_lock.held(".", "dvc", "prbench serve (start)", log=log):
        return release_score.recover(".", log)


def _rescore_when_served(journals, log=print, timeout: float = 600) -> None:
    """One score-rm run per interrupted release, once serve has registered the deployment."""
    from prefect.deployments import run_deployment

    deadline = time.monotonic() + timeout
    while True:
        try:
            for j in journals:
                r = j.release
                run = run_deployment("score-rm/score-rm", timeout=0, parameters={
                    "model": r.model, "revision": r.revision, "name": j.name, "source": r.source})
                log(f"prbench serve: {r.model}@{r.revision} was interrupted; scoring it again (flow run {run.name})")
            return
        except Exception as exc:   # the deployment is not registered yet
            if time.monotonic() > deadline:
                log(f"prbench serve: could not start the rescore runs: {exc}")
                return
            time.sleep(2)


def stop_gracefully(log=print) -> None:
    """At serve's exit: wait for a score-rm still running to commit; roll back one that was killed."""
    try:
        gitops.git(".", "rev-parse", "--git-dir")
    except gitops.GitError:
        return
    if repo_lock.holder(".", "dvc"):
        log(f"prbench serve: waiting for {repo_lock.describe(repo_lock.holder('.', 'dvc'))} to finish")
    with repo_lock.held(".", "dvc", "prbench serve (stop)", log=log):
        for j in release_score.recover(".", log):
            log(f"prbench serve: {j.release.model}@{j.release.revision} rolled back; the next start scores it again")


def serve(cron: str | None = None, watch_cron: str | None = None, params_path: str | None = None) -> None:
    """Serve every deployment from this process; schedules stay active when it stops. At start,
    releases a dead run left unfinished are rolled back and scored again; at exit, a run in progress
    finishes or is rolled back."""
    import threading

    todo = recover_at_start()
    if todo:
        threading.Thread(target=_rescore_when_served, args=(todo,), daemon=True, name="rescore").start()
    try:
        prefect_serve(*deployments(load_params(params_path or PARAMS), cron, watch_cron), pause_on_shutdown=False)
    finally:
        stop_gracefully()
