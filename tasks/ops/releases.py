"""New reward models: watch rules (params `releases.watch`), what they find, and which of it is new.

A release is a model at an exact revision: a Hub repo at a commit sha, or a local checkpoint folder
at the hash of its files. A release is new when neither params (`scoring.rms`) nor the registry
state file (kept in the repo, so a restart never re-announces) holds that model at that revision.
A new revision of a known model is a new version: it keeps the model's RM name."""
from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from tasks.core.artifacts import tree_hash, write_json
from tasks.core.errors import ConfigError, did_you_mean, typo_of
from tasks.core.registry import at_least, check_value

EVENT = "prbench.rm.released"
RULE_OPTIONS = {"hub": {"source": str, "author": str | None, "search": str | None, "tags": list[str] | None,
                        "pipeline_tag": str | None, "limit": at_least(1) | None},
                "local": {"source": str, "path": str}}   # each option's type, checked as a params key's
LOCAL_PREFIX = "tree:"          # the revision of a local folder: the hash of its files


@dataclass(frozen=True)
class Release:
    model: str                  # a Hub id "org/name", or a local folder (as the rule names it)
    revision: str               # the Hub commit sha, or "tree:<sha256 of the folder's files>"
    source: str                 # hub | local
    created_at: str | None = None

    def event_payload(self, name: str) -> dict:
        return {**asdict(self), "name": name}


def check_rules(rules, where: str = "releases.watch") -> list[dict]:
    """The watch rules, or one ConfigError naming the bad rule and key."""
    if not isinstance(rules, list):
        raise ConfigError(f"{where}: a list of rules, e.g. [{{source: hub, author: Org}}, {{source: local, path: dir}}]")
    for i, rule in enumerate(rules):
        at = f"{where}[{i}]"
        typo = typo_of("source", rule, {o for opts in RULE_OPTIONS.values() for o in opts}) \
            if isinstance(rule, dict) and "source" not in rule else None
        if typo:
            raise ConfigError(f"{at}.{typo}: not an option (did you mean 'source'?): a rule names its source with 'source'")
        source = rule.get("source") if isinstance(rule, dict) else rule
        if not isinstance(source, str) or source not in RULE_OPTIONS:
            raise ConfigError(f"{at}.source: {did_you_mean(str(source), RULE_OPTIONS)}")
        if not isinstance(rule, dict):   # a bare source name ("hub"): a rule is a mapping
            raise ConfigError(f"{at}: a mapping like {{source: {source}, ...}}, got {rule!r}")
        for key, value in rule.items():
            if key not in RULE_OPTIONS[source]:
                raise ConfigError(f"{at}.{key}: not an option of a {source} rule: "
                                  f"{did_you_mean(str(key), RULE_OPTIONS[source])}")
            wrong = check_value(value, RULE_OPTIONS[source][key], f"{at}.{key}")
            if wrong:
                raise ConfigError(wrong[0])
        if rule["source"] == "local" and not rule.get("path"):
            raise ConfigError(f"{at}.path: required (a folder with one checkpoint folder per model)")
        if rule["source"] == "hub" and not any(rule.get(k) for k in ("author", "search", "tags", "pipeline_tag")):
            raise ConfigError(f"{at}: a hub rule needs author, search, tags or pipeline_tag (else it matches the whole Hub)")
    return rules


def hub_releases(rule: dict, api=None) -> list[Release]:
    """Models matching a hub rule, newest first, each at its current commit (HfApi.list_models)."""
    from huggingface_hub import HfApi

    api = api or HfApi()
    tags = rule.get("tags") or None
    models = api.list_models(author=rule.get("author"), search=rule.get("search"), filter=tags,
                             pipeline_tag=rule.get("pipeline_tag"), sort="created_at", limit=rule.get("limit") or 20,
                             expand=["sha", "createdAt", "pipeline_tag", "tags"])
    out = []
    for m in models:
        sha = m.sha or api.model_info(m.id).sha   # the Hub may omit it from listings
        created = m.created_at.isoformat() if m.created_at else None
        out.append(Release(model=m.id, revision=sha, source="hub", created_at=created))
    return out


def local_releases(rule: dict, root: Path = Path(".")) -> list[Release]:
    """Each sub-folder with a config.json under the rule's folder, at the hash of its files."""
    folder = Path(rule["path"])
    base = folder if folder.is_absolute() else root / folder
    if not base.is_dir():
        return []
    return [Release(model=(folder / d.name).as_posix(), revision=LOCAL_PREFIX + tree_hash([d]), source="local")
            for d in sorted(base.iterdir()) if (d / "config.json").is_file()]


def find_releases(rules: list[dict], root: Path = Path("."), api=None) -> list[Release]:
    found: list[Release] = []
    for rule in rules:
        found += hub_releases(rule, api) if rule["source"] == "hub" else local_releases(rule, root)
    return found


# --- what is already registered ---------------------------------------------------------------
def load_state(path) -> dict:
    """{"models": {model: {"revision", "rm", "status", "message"}}}; a missing file is empty."""
    path = Path(path)
    if not path.exists():
        return {"models": {}}
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ConfigError(f"{path}: not valid JSON ({exc}); fix or delete it (every release is then new)") from None
    state.setdefault("models", {})
    return state


def save_state(state: dict, path) -> None:
    write_json(state, path)


def record(state: dict, release: Release, rm: str, status: str, message: str | None = None) -> dict:
    state["models"][release.model] = {"revision": release.revision, "rm": rm, "source": release.source,
                                      "status": status, "message": message}
    return state


def update_state(path, release: Release, rm: str, status: str, message: str | None = None) -> dict:
    """Record one release in the state file under a lock: the watcher and a score-rm run may
    write it at the same time, and neither may drop the other's record."""
    import fcntl

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(f".{path.name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        state = record(load_state(path), release, rm, status, message)
        save_state(state, path)
    return state


def registered(params: dict, state: dict) -> set[tuple[str, str | None]]:
    """(model, revision) of every RM in params and every release in the state file."""
    rms = params.get("scoring", {}).get("rms") or {}
    known = {(str(e.get("model")), e.get("revision")) for e in rms.values() if isinstance(e, dict) and e.get("model")}
    return known | {(m, s.get("revision")) for m, s in state["models"].items()}


def new_releases(found: list[Release], known: set) -> list[Release]:
    """Releases not yet registered, oldest first (so events arrive in release order), each once."""
    seen, out = set(known), []
    for r in reversed(found):
        if (r.model, r.revision) not in seen:
            seen.add((r.model, r.revision))
            out.append(r)
    return out


def rm_name(model: str, rms: dict, state: dict | None = None) -> str:
    """The RM's key in scoring.rms (a DVC foreach key): the model's own name, lowercased; a model
    already registered keeps its name; another model's name gets the org prefix, then a number."""
    for name, entry in rms.items():
        if isinstance(entry, dict) and str(entry.get("model")) == model:
            return name
    if state and model in state["models"] and state["models"][model].get("rm"):
        return state["models"][model]["rm"]
    slug = lambda s: re.sub(r"[^a-z0-9_-]+", "-", s.lower()).strip("-") or "rm"  # noqa: E731
    parts = [p for p in Path(model).parts if p not in ("/", ".")]
    taken = set(rms) | {s.get("rm") for m, s in (state or {"models": {}})["models"].items() if m != model}
    candidates = [slug(parts[-1]), slug("-".join(parts[-2:]))]
    for name in candidates:
        if name not in taken:
            return name
    n = 2
    while f"{candidates[-1]}-{n}" in taken:
        n += 1
    return f"{candidates[-1]}-{n}"


def rm_entry(release: Release, defaults: dict) -> dict:
    """The scoring.rms entry of a release: the params defaults plus the model pinned at its revision."""
    return {"kind": "seq-cls", **(defaults or {}), "model": release.model, "revision": release.revision}


# --- before a release touches params: can it be downloaded and configured? --------------------
# what a kind loads, told from config.json before any weights: (architecture suffix, what it is, why)
ARCHITECTURES = {"seq-cls": ("ForSequenceClassification", "a sequence-classification reward model",
                             "a seq-cls RM needs a trained classification head"),
                 "dpo": ("ForCausalLM", "a causal language model", "a dpo RM scores answers by a policy's log-probabilities")}
SKIP_FILES = ["*.onnx", "onnx/*", "*.h5", "*.msgpack", "*.ot", "*.gguf", "openvino/*", "*.tflite"]


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _http_reason(exc: Exception) -> str:
    """`404 EntryNotFound: ...` from the client's HTTP error; the one-line message otherwise."""
    response = getattr(exc, "response", None)
    if response is not None and getattr(response, "status_code", None):
        code = response.headers.get("X-Error-Code") or ""
        text = response.headers.get("X-Error-Message") or ""
        return " ".join(str(x) for x in (response.status_code, code, text) if x)
    return _one_line(exc)


def _skipped(path: str) -> bool:
    from fnmatch import fnmatch

    return any(fnmatch(path, pat) for pat in SKIP_FILES)


def download(release: Release) -> Path:
    """Every file of a Hub release at its exact revision, one by one (config first), into the HF
    cache the score stage then reads; the folder of the snapshot. One ConfigError naming the file
    at the first that cannot be had: a 404 is not retried (it cannot succeed)."""
    from huggingface_hub import HfApi, hf_hub_download

    where = f"{release.model}@{release.revision}"
    try:
        info = HfApi().model_info(release.model, revision=release.revision)
    except Exception as exc:   # the client's errors are many (HTTP, network, auth): all mean "not downloadable"
        raise ConfigError(f"{where}: download failed: {_http_reason(exc)}") from None
    files = sorted((s.rfilename for s in info.siblings or [] if not _skipped(s.rfilename)),
                   key=lambda f: (f != "config.json", f))
    if not files:
        raise ConfigError(f"{where}: download failed: the revision lists no files")
    folder = None
    for name in files:
        try:
            got = hf_hub_download(release.model, name, revision=release.revision)
        except Exception as exc:
            raise ConfigError(f"{where}: download failed: {name}: {_http_reason(exc)}") from None
        folder = folder or Path(got).parents[len(Path(name).parts) - 1]
    return folder


def prefetch(release: Release, entry: dict, root: Path = Path("."), name: str = "release") -> None:
    """Before params are touched: every file of the release downloaded (weights included) and the
    RM built from them by its kind, so a file that is missing or does not load fails here, in one
    ConfigError naming the model, revision, file (when one is to blame) and reason."""
    where = f"{release.model}@{release.revision}"
    if release.source == "hub":
        path = download(release)
    else:
        path = Path(release.model) if Path(release.model).is_absolute() else root / release.model
        if not path.is_dir():
            raise ConfigError(f"{where}: checkpoint folder {path} not found")
        if release.revision != LOCAL_PREFIX + tree_hash([path]):
            raise ConfigError(f"{where}: the folder's files changed since the release was seen; the watcher "
                              "announces the new content as a new release")
    from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(str(path))
    except Exception as exc:   # transformers raises OSError, ValueError, KeyError for bad configs
        raise ConfigError(f"{where}: config does not load: config.json: {_one_line(exc)}") from None
    archs = list(getattr(config, "architectures", None) or [])
    need = ARCHITECTURES.get(entry.get("kind"))
    if need and not any(a.endswith(need[0]) for a in archs):
        raise ConfigError(f"{where}: not {need[1]} (architectures: {', '.join(archs) or 'none'}); {need[2]}")
    from tasks.models.rms.registry import make_rm

    local = {k: v for k, v in entry.items() if k != "revision"}
    try:
        make_rm(name, {**local, "model": str(path)}, None)   # the files as the kind loads them: weights too
    except Exception as exc:   # a truncated or foreign weights file, a tokenizer that does not load
        raise ConfigError(f"{where}: does not load as a {entry.get('kind')} RM: {_one_line(exc)[:400]}") from None
