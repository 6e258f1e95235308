"""The deployments `prbench serve` runs from one process, against a real Prefect server:

- `reproduce`: `dvc repro` on a cron (params `releases.reproduce_cron` or --cron); commits what it changed.
- `watch-releases`: on a cron, runs the watch rules (params `releases.watch`) and emits one
  `prbench.rm.released` event per model at a revision not yet registered.
- `score-rm`: triggered by that event (an automation), or run by hand with a model and revision:
  adds the RM pinned at its revision to params.yaml, `dvc repro` (only its stages and the reports
  run), commits params, dvc.lock and metrics, and writes a release note artifact.

Runs that call DVC take one slot of the global concurrency limit `prbench-dvc` (limit 1): DVC holds
one lock per repo, so a second run waits instead of failing. Logic lives in tasks/."""
from __future__ import annotations

import re
from pathlib import Path

from prefect import flow, get_run_logger
from prefect import serve as prefect_serve
from prefect.artifacts import create_markdown_artifact
from prefect.concurrency.sync import concurrency
from prefect.events import DeploymentEventTrigger, emit_event
from prefect.runtime import flow_run
from prefect.states import Failed

from tasks import gitops, layout, release_note, releases
from tasks.artifacts import read_table
from tasks.errors import ConfigError
from tasks.params import load_params
from tasks.params_edit import set_rm
from tasks.repro import dvc

LIMIT = "prbench-dvc"
PARAMS = "params.yaml"
STATE = layout.RELEASES["state"]
REPORT = Path("report/index.html")   # the report stage's page, linked from release notes when present


def ensure_limit() -> None:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        client.upsert_global_concurrency_limit_by_name(LIMIT, 1)


def _repro(targets=()):
    logger = get_run_logger()
    return dvc(".", "repro", *targets, log=logger.info)


@flow(name="reproduce", flow_run_name="reproduce", log_prints=True)
def reproduce_flow(targets: list[str] | None = None):
    """`dvc repro` (all stages, or `targets`); commit the files it changed, nothing else."""
    branch = load_params(PARAMS)["releases"].get("branch")
    ensure_limit()
    with concurrency(LIMIT, occupy=1, strict=True):
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
    params = load_params(PARAMS)
    rules = releases.check_rules(params["releases"].get("watch") or [])
    state = releases.load_state(STATE)
    new = releases.new_releases(releases.find_releases(rules), releases.registered(params, state))
    announced = []
    for release in new:
        name = releases.rm_name(release.model, params["scoring"]["rms"], state)
        emit_event(releases.EVENT, resource={"prefect.resource.id": f"prbench.rm.{name}",
                                             "prefect.resource.name": release.model},
                   payload=release.event_payload(name))
        state = releases.update_state(STATE, release, name, "announced")
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


@flow(name="score-rm", flow_run_name=_score_run_name, log_prints=True)
def score_rm_flow(model: str, revision: str, name: str = "", source: str = "hub"):
    """Score one released RM at its exact revision. A download or config failure leaves params.yaml
    and dvc.lock untouched; a failed `dvc repro` puts them back."""
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
    try:
        releases.prefetch(release, entry)
    except ConfigError as exc:
        return _fail(release, name, f"score-rm {exc}")
    ensure_limit()
    with concurrency(LIMIT, occupy=1, strict=True):
        kept = {p: Path(p).read_bytes() for p in (PARAMS, "dvc.lock") if Path(p).exists()}
        board, before = _board(), gitops.snapshot(".")
        try:
            set_rm(PARAMS, name, entry, comment=f"released {model}, added by score-rm")
        except ConfigError as exc:
            return _fail(release, name, f"{where}: {exc}")
        result = _repro()
        if result.rc != 0:
            for path, data in kept.items():
                Path(path).write_bytes(data)
            dvc(".", "checkout", "--quiet", log=get_run_logger().info)   # outputs back to the restored lock
            return _fail(release, name, f"{where}: dvc repro failed: {result.error()}")
        releases.update_state(STATE, release, name, "scored")
        paths = gitops.changed(".", before)
        if gitops.dirty(".", STATE) and STATE not in paths:   # the watcher's record of this release
            paths.append(STATE)
        sha = gitops.commit(".", paths, f"score-rm: add {name} = {model}@{revision}", rel.get("branch")) if paths else None
    note = release_note.summary(board, _board(), name, rel["rank_strategy"])
    create_markdown_artifact(key=f"release-{re.sub(r'[^a-z0-9-]+', '-', name.lower())}",
                             markdown=release_note.markdown(note, model, revision, REPORT),
                             description=f"{name}: {model}@{revision}")
    print(release_note.markdown(note, model, revision, REPORT).splitlines()[0])
    return {"rm": name, "ran": result.ran, "committed": sorted(paths), "commit": sha, **note}


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


def serve(cron: str | None = None, watch_cron: str | None = None, params_path: str | None = None) -> None:
    """Serve every deployment from this process; schedules stay active when it stops."""
    ensure_limit()
    prefect_serve(*deployments(load_params(params_path or PARAMS), cron, watch_cron), pause_on_shutdown=False)
