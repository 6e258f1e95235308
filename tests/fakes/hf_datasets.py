"""The fake Hub (tests/fakes/hf_hub.py) with dataset repos: the routes `datasets.load_dataset` and
huggingface_hub (hf_hub_download, HfFileSystem, dataset_info, snapshot_download) use, read off
datasets 5.2 / huggingface_hub 2.4, so the real clients load a dataset from it with HF_ENDPOINT set.

  GET  /api/datasets/{repo}[/revision/{rev}]            -> {id, sha, siblings, gated, cardData, ...}
  GET  /api/datasets/{repo}/tree/{rev}[/{path}]?recursive= -> files and directories under path
  POST /api/datasets/{repo}/paths-info/{rev}            -> the entries of the form's `paths`
  HEAD|GET /datasets/{repo}/resolve/{rev}/{path}        -> the file (Range honoured); X-Repo-Commit, ETag

Errors carry X-Error-Code as the Hub's do (RepoNotFound, RevisionNotFound, EntryNotFound, GatedRepo:
401 without a token, 403 with a wrong one), so the clients raise their own exception types."""
from __future__ import annotations

import hashlib
import io
import json
import re
from pathlib import PurePosixPath
from urllib.parse import parse_qs, unquote, urlparse

from tests.fakes.hf_hub import EPOCH, FakeHub


class FakeDatasetHub(FakeHub):
    def __init__(self, token: str | None = None):
        super().__init__()
        self.datasets: dict[str, dict] = {}
        self.token = token   # what a gated repo accepts as `Authorization: Bearer <token>`

    def publish(self, repo_id: str, files: dict[str, bytes | str], *, gated: bool = False) -> str:
        """A new commit of dataset `repo_id` holding exactly `files` (path -> bytes); its sha."""
        blobs = {p: (d.encode() if isinstance(d, str) else d) for p, d in sorted(files.items())}
        repo = self.datasets.setdefault(repo_id, {"commits": [], "gated": gated})
        digest = hashlib.sha1(f"{repo_id}\0{len(repo['commits'])}".encode())
        for path, data in blobs.items():
            digest.update(path.encode() + b"\0" + hashlib.sha1(data).digest())
        repo["commits"].append({"sha": digest.hexdigest(), "files": blobs})
        repo["gated"] = gated
        return repo["commits"][-1]["sha"]

    # --- routes ---------------------------------------------------------------------------------
    def route(self, method, raw_path, headers, body):
        url = urlparse(raw_path)
        path, q = unquote(url.path), parse_qs(url.query)
        m = re.fullmatch(r"/api/datasets/([^/]+/[^/]+)(/.*)?", path) or \
            re.fullmatch(r"/datasets/([^/]+/[^/]+)(/resolve/.*)", path)
        if not m:
            return self.handle(method, raw_path)
        repo_id, rest = m.group(1), m.group(2) or ""
        found = self._dataset(repo_id, headers)
        if isinstance(found, tuple):
            return found
        if rest.startswith("/paths-info/"):
            commit, err = self._rev(found, rest[len("/paths-info/"):])
            wanted = parse_qs(body.decode()).get("paths", []) if body else []
            return err or self.json(200, [e for p in wanted for e in self._entries(commit, p, exact=True)])
        t = re.fullmatch(r"/tree/([^/]+)(?:/(.*))?", rest)
        if t:
            commit, err = self._rev(found, t.group(1))
            if err:
                return err
            sub = (t.group(2) or "").strip("/")
            recursive = (q.get("recursive") or ["false"])[0].lower() == "true"
            entries = self._entries(commit, sub, recursive=recursive)
            if sub and not entries:
                return self.error(404, "EntryNotFound", f"{sub} does not exist on {t.group(1)}")
            return self.json(200, entries)
        r = re.fullmatch(r"/resolve/([^/]+)/(.+)", rest)
        if r:
            commit, err = self._rev(found, r.group(1))
            if err:
                return err
            if r.group(2) not in commit["files"]:
                return self.error(404, "EntryNotFound", f"{r.group(2)} does not exist on {r.group(1)}")
            data = commit["files"][r.group(2)]
            return 200, {"X-Repo-Commit": commit["sha"], "ETag": f'"{hashlib.sha1(data).hexdigest()}"',
                         "Accept-Ranges": "bytes", "Content-Type": "application/octet-stream"}, data
        i = re.fullmatch(r"(?:/revision/([^/]+))?", rest)
        if i is None:
            return self.error(404, None, f"no route {path}")
        commit, err = self._rev(found, i.group(1) or "main")
        return err or self.json(200, self._dataset_info(repo_id, found, commit))

    def _dataset(self, repo_id: str, headers):
        repo = self.datasets.get(repo_id)
        if repo is None:
            return self.error(404, "RepoNotFound", "Repository not found")
        if repo["gated"]:
            auth = headers.get("Authorization") or ""
            if not auth.startswith("Bearer "):
                return self.error(401, "GatedRepo", f"Access to dataset {repo_id} is restricted. You must "
                                  "have access to it and be authenticated to access it.")
            if auth[len("Bearer "):] != self.token:
                return self.error(403, "GatedRepo", f"Access to dataset {repo_id} is restricted and you are "
                                  "not in the authorized list.")
        return repo

    def _rev(self, repo: dict, rev: str):
        commits = repo["commits"]
        commit = commits[-1] if rev in ("main", "HEAD") else next((c for c in commits if c["sha"] == rev), None)
        if commit is None:
            return None, self.error(404, "RevisionNotFound", f"Invalid rev id: {rev}")
        return commit, None

    @staticmethod
    def _entries(commit: dict, sub: str, *, recursive: bool = False, exact: bool = False) -> list[dict]:
        """Tree entries under `sub` (exact: `sub` itself), directories included, as the Hub lists them."""
        files, dirs = commit["files"], set()
        for p in files:
            dirs.update(str(a) for a in PurePosixPath(p).parents if str(a) != ".")
        oid = lambda s: hashlib.sha1(s.encode()).hexdigest()  # noqa: E731
        entry = lambda p: ({"type": "file", "oid": hashlib.sha1(files[p]).hexdigest(), "size": len(files[p]),  # noqa: E731
                            "path": p} if p in files else {"type": "directory", "oid": oid(p), "size": 0, "path": p})
        if exact:
            return [entry(sub)] if sub in files or sub in dirs else []
        prefix = f"{sub}/" if sub else ""
        under = [p for p in [*files, *dirs] if p.startswith(prefix) and p != sub]
        if not recursive:
            under = [p for p in under if "/" not in p[len(prefix):]]
        return [entry(p) for p in sorted(under)]

    def _dataset_info(self, repo_id: str, repo: dict, commit: dict) -> dict:
        stamp = EPOCH.isoformat().replace("+00:00", ".000Z")
        return {"_id": hashlib.md5(repo_id.encode()).hexdigest()[:24], "id": repo_id, "author": repo_id.split("/")[0],
                "sha": commit["sha"], "private": False, "gated": "manual" if repo["gated"] else False,
                "disabled": False, "downloads": 0, "likes": 0, "tags": [], "createdAt": stamp, "lastModified": stamp,
                "siblings": [{"rfilename": p} for p in commit["files"]]}


def parquet(rows: list[dict]) -> bytes:
    """Rows as one Parquet file's bytes (nested lists and structs kept as the Hub's files hold them)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), buf)
    return buf.getvalue()


def card(configs: dict[str, dict[str, str]] | None) -> str:
    """A dataset card (README.md) whose YAML `configs:` maps config -> {split: data_files pattern}."""
    if not configs:
        return "---\nlicense: other\n---\n# card\n"
    lines = ["---", "configs:"]
    for name, splits in configs.items():
        lines += [f"- config_name: {name}", "  data_files:"]
        lines += [f"  - split: {s}\n    path: {p}" for s, p in splits.items()]
    return "\n".join(lines + ["---", "# card", ""])


def jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()
