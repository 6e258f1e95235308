"""`prbench release check | score MODEL[@REV] | status`: the release deployments of `prbench serve`,
from the project folder, with nothing to export: the API is PREFECT_API_URL when set, else the
serve server of this project (http://127.0.0.1:<releases.port>/api)."""
from __future__ import annotations

import os
from pathlib import Path

from tasks.core.flags import Only, at_least, name_arg, only

# serve and release use PREFECT_API_URL's server when it is set: then --port would be ignored
API_URL_SET = Only("port", "--port", lambda a: not os.environ.get("PREFECT_API_URL"),
                   "PREFECT_API_URL is set ({env[PREFECT_API_URL]}): that server is used and none on a port of its own",
                   "unset PREFECT_API_URL to use the one on --port")


def api_url(port: int | None = None) -> str:
    if os.environ.get("PREFECT_API_URL"):
        return os.environ["PREFECT_API_URL"]
    if port is None:
        from tasks.ops.params import load_params

        port = load_params()["releases"]["port"]
    return f"http://127.0.0.1:{port}/api"


def _connect(args) -> str:
    """Point this process's Prefect client at serve's server (before prefect is imported)."""
    from flows.server import healthy

    url = api_url(args.port)
    if not healthy(url):
        from tasks.core.errors import ConfigError

        raise ConfigError(f"prbench release {args.release_command}: no Prefect server at {url}; start "
                          "`prbench serve` in this project first (or set PREFECT_API_URL to its server)")
    os.environ.update(PREFECT_API_URL=url, PREFECT_UI_URL=url.removesuffix("/api"))
    return url


def _run(deployment: str, url: str, parameters: dict | None = None) -> int:
    from prefect.deployments import run_deployment

    run = run_deployment(deployment, parameters=parameters or {}, timeout=0)
    print(f"prbench: started {deployment.split('/')[0]} run '{run.name}': {url.removesuffix('/api')}/runs/flow-run/{run.id}")
    return 0


def resolve(spec: str, source: str) -> tuple[str, str]:
    """MODEL[@REV] -> (model, revision): a Hub model's current commit, or a local folder's file hash."""
    from tasks.ops import releases
    from tasks.core.artifacts import tree_hash
    from tasks.core.errors import ConfigError

    model, _, rev = spec.partition("@")
    if source == "local":
        path = Path(model)
        if not (path / "config.json").is_file():
            raise ConfigError(f"{model}: not a checkpoint folder (no config.json)")
        return model, rev or releases.LOCAL_PREFIX + tree_hash([path])
    if rev and len(rev) == 40:
        return model, rev
    from huggingface_hub import HfApi

    try:
        return model, HfApi().model_info(model, revision=rev or None).sha
    except Exception as exc:   # the client's errors: not found, network
        raise ConfigError(f"{spec}: cannot resolve the revision on the Hub: {releases._one_line(exc)}") from None


def status_lines(root: str | Path = ".") -> list[str]:
    """Registered releases, the one being scored, those waiting, and interrupted ones (with reasons)."""
    from tasks.core import layout
    from tasks.ops import release_txn, releases, repo_lock

    out = []
    state = releases.load_state(Path(root) / layout.RELEASES["state"])["models"]
    for model, rec in sorted(state.items()):
        why = f": {rec['message']}" if rec.get("message") else ""
        out.append(f"{rec.get('status', '?'):<11} {rec.get('rm')} = {model}@{rec.get('revision')}{why}")
    try:
        running, dead = release_txn.running(root), release_txn.dead(root)
    except Exception:   # not a git repo
        running, dead = [], []
    for data in running:
        r = data["release"]
        out.append(f"{'running':<11} {data['name']} = {r['model']}@{r['revision']} (step: {data.get('phase')})")
    for j in dead:
        out.append(f"{'interrupted':<11} {j.name} = {j.release.model}@{j.release.revision}: its run died; the next "
                   "score-rm or `prbench serve` start rolls it back and scores it again")
    try:
        waiting = repo_lock.waiters(root)
    except Exception:   # not a git repo
        waiting = []
    for w in waiting:
        out.append(f"{'queued':<11} {w['what']}: waits for {repo_lock.describe(w.get('for'))}")
    return out or ["no releases registered"]


def cmd_release(args) -> int:
    if args.release_command == "status":
        for line in status_lines():
            print(line)
        return 0
    url = _connect(args)
    if args.release_command == "check":
        return _run("watch-releases/watch-releases", url)
    from tasks.ops import releases
    from tasks.ops.params import load_params

    model, revision = resolve(args.model, args.source)
    params = load_params()
    name = args.name or releases.rm_name(model, params["scoring"]["rms"],
                                         releases.load_state(releases_state()))
    return _run("score-rm/score-rm", url, {"model": model, "revision": revision, "name": name, "source": args.source})


def releases_state() -> str:
    from tasks.core import layout

    return layout.RELEASES["state"]


def add_parser(sub) -> None:
    rel = sub.add_parser("release", help="the release watcher and score-rm of `prbench serve`: check, score, status")
    rsub = rel.add_subparsers(dest="release_command", required=True)
    check = rsub.add_parser("check", help="run the release watcher now")
    score = rsub.add_parser("score", help="score one model now: MODEL[@REV] (a Hub id, or a folder with --source local)")
    score.add_argument("model", metavar="MODEL[@REV]")
    score.add_argument("--name", default=None, type=name_arg("--name"),
                       help="its name under scoring.rms (default: from the model)")
    score.add_argument("--source", default="hub", choices=["hub", "local"])
    rsub.add_parser("status", help="registered, running, queued and interrupted releases (with reasons)")
    for p in (check, score):
        p.add_argument("--port", type=at_least(1, "a port", 65535), default=None,
                       help="serve's server port (default releases.port)")
        only(p, API_URL_SET)
    rel.set_defaults(func=cmd_release)
