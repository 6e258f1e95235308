"""dvc.lock keeps an entry for every stage that ever ran, also after the stage left dvc.yaml (an RM removed
from scoring.rms, an RM rl.rms no longer lists). DVC ignores such entries but carries them through every
rewrite of the file (plain `dvc repro` rewrites it whole after each stage), so `prbench run` drops them
before `dvc repro`."""
from __future__ import annotations

from pathlib import Path

LOCK = "dvc.lock"


def stage_names(params: dict) -> set[str]:
    """The names `dvc repro` knows for these params: each table stage, per-key ones as `<stage>@<key>`."""
    from tasks.core.stage_table import TABLE, fan_keys

    return {n for s in TABLE for n in ([f"{s.name}@{k}" for k in fan_keys(s, params)] if s.per_rm else [s.name])}


def prune(root: str | Path, params: dict) -> list[str]:
    """Drop the lock entries of stages these params no longer have, in one atomic write (DVC's own YAML
    dumper, so the kept entries are as DVC writes them); the names dropped."""
    from dvc.utils.serialize import dumps_yaml, parse_yaml_for_update

    from tasks.core.artifacts import write_text
    from tasks.ops.lock_splice import names, splice

    path = Path(root) / LOCK
    if not path.exists():
        return []
    text, known = path.read_text(encoding="utf-8"), stage_names(params)
    locked = names(text)   # a plain lock: its key lines alone (a round-trip parse costs ~1.5 s at 12k lines)
    if locked is not None:
        gone = [name for name in locked if name not in known]
        if gone:
            write_text(splice(text, {}, drop=set(gone)), path)
        return gone
    data = parse_yaml_for_update(text, str(path))
    gone = [name for name in (data.get("stages") or {}) if name not in known]
    if gone:
        for name in gone:
            del data["stages"][name]
        write_text(dumps_yaml(data), path)
    return gone
