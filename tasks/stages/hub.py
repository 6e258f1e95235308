"""Reading one config / split of a dataset on the HF hub at a pinned revision, through the real
`datasets` client (HF_ENDPOINT, a mirror, and HF_TOKEN are read from the environment by it).

Online, the revision asked for (null = main) is resolved to its commit sha first (HfApi.dataset_info),
and the rows are read at that sha, so what a run read is named by the sha it records. Offline
(HF_HUB_OFFLINE=1), the files come from the HF cache's snapshot of that revision; nothing cached is one
line naming the repo, revision and the `hf download` command that fetches it. Every failure is one line
naming repo, revision, config and split (tasks.core.errors.ConfigError)."""
from __future__ import annotations

import os
from typing import Iterator

from tasks.core.errors import ConfigError


def label(hub_id: str, revision: str | None, config: str | None, split: str) -> str:
    """Where a row came from, as errors name it: hf://<id>@<revision>/<config>/<split>."""
    return f"hf://{hub_id}@{revision or 'main'}" + (f"/{config}" if config else "") + f"/{split}"


def _offline() -> bool:
    from huggingface_hub import constants   # HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE), as the clients read it

    return bool(constants.HF_HUB_OFFLINE)


def _fail(where: str, hub_id: str, revision: str | None, config, split, why: str) -> ConfigError:
    return ConfigError(f"{where}: cannot load {label(hub_id, revision, config, split)}: {why}")


def resolve(where: str, hub_id: str, revision: str | None, config=None, split: str = "") -> str:
    """The commit sha `revision` (null = main) names now: online from the hub, offline from the HF cache."""
    from huggingface_hub import HfApi, snapshot_download
    from huggingface_hub.errors import GatedRepoError, LocalEntryNotFoundError, RepositoryNotFoundError, \
        RevisionNotFoundError

    rev = revision or "main"
    try:
        if _offline():
            folder = snapshot_download(hub_id, repo_type="dataset", revision=rev, local_files_only=True)
            return os.path.basename(folder)
        return HfApi().dataset_info(hub_id, revision=rev).sha
    except GatedRepoError:
        why = (f"a gated dataset: accept the terms at https://huggingface.co/datasets/{hub_id}, set HF_TOKEN "
               "(HF_TOKEN " + ("was refused" if os.environ.get("HF_TOKEN") else "is not set") + ")")
    except RevisionNotFoundError:
        why = f"no revision '{rev}' in the repo (a branch, tag or commit sha)"
    except RepositoryNotFoundError:
        why = f"no such dataset repo on {os.environ.get('HF_ENDPOINT') or 'huggingface.co'} (ids are case-sensitive)"
    except LocalEntryNotFoundError:
        why = (f"offline (HF_HUB_OFFLINE) and revision '{rev}' is not in the HF cache; where the network is, run "
               f"`hf download {hub_id} --repo-type dataset --revision {rev}` (same HF_HOME), or unset HF_HUB_OFFLINE")
    except Exception as exc:  # noqa: BLE001 - a network failure of any kind: say which and where
        why = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
    raise _fail(where, hub_id, revision, config, split, why) from None


def rows(where: str, hub_id: str, config: str | None, split: str, sha: str) -> Iterator[dict]:
    """The rows of one config / split at commit `sha` (from resolve)."""
    import datasets

    source = hub_id
    if _offline():   # the cached snapshot of exactly this sha, read as a local folder (no hub call)
        from huggingface_hub import snapshot_download

        source = snapshot_download(hub_id, repo_type="dataset", revision=sha, local_files_only=True)
    try:
        ds = datasets.load_dataset(source, config, split=split, revision=None if _offline() else sha)
    except Exception as exc:  # noqa: BLE001 - datasets raises ValueError for configs and splits alike
        raise _fail(where, hub_id, sha, config, split, _why(exc, config, split)) from None
    yield from ds


def _why(exc: Exception, config, split) -> str:
    text = " ".join(str(exc).split())
    if "BuilderConfig" in text or "Config name is missing" in text:
        return f"no config {config!r} in the repo ({text[:240]})"
    if "Unknown split" in text or "Bad split" in text:
        return f"no split '{split}' ({text[:200]})"
    return f"{type(exc).__name__}: {text[:240]}"


def local_revision(path: str) -> str | None:
    """The commit sha of a local copy made by `hf download --local-dir` (its .cache/huggingface/download
    metadata: sha, etag, time per file); None for a copy made any other way. Shas that differ are an error."""
    from pathlib import Path

    root = Path(path)
    for folder in [root, *root.parents] if root.is_dir() else list(root.parents):
        meta = folder / ".cache" / "huggingface" / "download"
        if meta.is_dir():
            shas = {f.read_text().split("\n", 1)[0].strip() for f in meta.rglob("*.metadata")}
            if len(shas) > 1:
                raise ConfigError(f"{path}: a local copy mixing revisions {', '.join(sorted(shas))}; download it "
                                  "again at one revision (`hf download ... --revision <sha> --local-dir ...`)")
            return shas.pop() if shas else None
    return None


def check_pin(key: str, hub_id: str, path: str, pinned: str | None) -> str | None:
    """The sha of the local copy at `path`; a pinned sha it does not hold is one line with the command."""
    import re

    read = local_revision(path)
    if pinned and re.fullmatch(r"[0-9a-f]{40}", pinned) and read != pinned:
        held = f"revision {read}" if read else "not a `hf download --local-dir` copy"
        raise ConfigError(f"{key}: pins {pinned} but the local copy at {path} is {held}: run `hf download {hub_id} "
                          f"--repo-type dataset --revision {pinned} --local-dir {path}`")
    return read
