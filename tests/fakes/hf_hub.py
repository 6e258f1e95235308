"""A fake Hugging Face Hub on 127.0.0.1: the REST routes `huggingface_hub` (HfApi.list_models,
model_info, snapshot_download) and `transformers.from_pretrained` use, so the real client code
runs against it when HF_ENDPOINT points here.

  GET  /api/models?author=&search=&filter=&pipeline_tag=&sort=createdAt&direction=-1&limit=
  GET  /api/models/{org}/{name}[/revision/{rev}]        -> {id, sha, siblings, createdAt, ...}
  GET  /api/models/{org}/{name}/tree/{rev}[/{path}]     -> [{type: file, path, size, oid}]
  HEAD|GET /{org}/{name}/resolve/{rev}/{path}           -> the file; X-Repo-Commit, ETag

Errors carry the Hub's X-Error-Code header (RepoNotFound, RevisionNotFound, EntryNotFound), so
the client raises its own exception types. `release(..., broken=True)` lists a model whose
files all answer 404, as a release whose upload went wrong would; `missing=(...)` only those files."""
from __future__ import annotations

import hashlib
import json
import re
import threading
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

from tests.fakes import LocalHTTP

EPOCH = datetime(2026, 1, 1, tzinfo=timezone.utc)


class FakeHub(LocalHTTP):
    def __init__(self):
        self.repos: dict[str, dict] = {}
        self.requests: list[tuple[str, str]] = []   # (method, path) in arrival order
        self._lock = threading.Lock()

    # --- content --------------------------------------------------------------------------------
    def release(self, repo_id: str, folder: str | Path, *, tags=("text-classification",),
                pipeline_tag: str = "text-classification", broken: bool = False,
                missing: tuple[str, ...] = (), replace: dict[str, bytes] | None = None) -> str:
        """Publish `folder`'s files as a new commit of `repo_id`; return the commit sha. `missing`:
        files listed but answering 404 (an upload that went wrong); `replace`: files' bytes swapped."""
        root = Path(folder)
        files = {f.relative_to(root).as_posix(): f.read_bytes() for f in sorted(root.rglob("*")) if f.is_file()}
        files.update(replace or {})
        digest = hashlib.sha1(repo_id.encode() + b"\0")
        for path, data in files.items():
            digest.update(path.encode() + b"\0" + hashlib.sha1(data).digest())
        with self._lock:
            repo = self.repos.setdefault(repo_id, {"commits": [], "tags": list(tags), "pipeline_tag": pipeline_tag})
            digest.update(str(len(repo["commits"])).encode())
            sha = digest.hexdigest()
            created = EPOCH + timedelta(minutes=len(self.repos) * 10 + len(repo["commits"]))
            repo["commits"].append({"sha": sha, "files": files, "broken": broken, "created": created,
                                    "missing": set(missing)})
        return sha

    def _info(self, repo_id: str, commit: dict) -> dict:
        repo = self.repos[repo_id]
        return {"_id": hashlib.md5(repo_id.encode()).hexdigest()[:24], "id": repo_id, "modelId": repo_id,
                "author": repo_id.split("/")[0], "sha": commit["sha"], "private": False, "gated": False,
                "disabled": False, "downloads": 0, "likes": 0, "library_name": "transformers",
                "tags": repo["tags"], "pipeline_tag": repo["pipeline_tag"],
                "createdAt": repo["commits"][0]["created"].isoformat().replace("+00:00", ".000Z"),
                "lastModified": commit["created"].isoformat().replace("+00:00", ".000Z"),
                "siblings": [{"rfilename": p} for p in commit["files"]]}

    def _commit(self, repo_id: str, rev: str) -> dict | None:
        commits = self.repos[repo_id]["commits"]
        if rev in ("main", "HEAD"):
            return commits[-1]
        return next((c for c in commits if c["sha"] == rev), None)

    # --- routes ---------------------------------------------------------------------------------
    def list_models(self, q: dict) -> list[dict]:
        one = lambda k: (q.get(k) or [None])[0]  # noqa: E731
        out = []
        for repo_id, repo in self.repos.items():
            if one("author") and repo_id.split("/")[0] != one("author"):
                continue
            if one("search") and one("search").lower() not in repo_id.lower():
                continue
            if any(t not in repo["tags"] for t in q.get("filter", [])):
                continue
            if one("pipeline_tag") and repo["pipeline_tag"] != one("pipeline_tag"):
                continue
            out.append(self._info(repo_id, repo["commits"][-1]))
        if one("sort") == "createdAt":
            out.sort(key=lambda m: m["createdAt"], reverse=one("direction") != "1")
        return out[: int(one("limit"))] if one("limit") else out

    def handle(self, method: str, raw_path: str) -> tuple[int, dict, bytes]:
        url = urlparse(raw_path)
        path, q = unquote(url.path), parse_qs(url.query)
        if path == "/api/models":
            return self.json(200, self.list_models(q))
        m = re.fullmatch(r"/api/models/([^/]+/[^/]+)(?:/revision/([^/]+))?", path)
        if m:
            repo_id, rev = m.group(1), m.group(2) or "main"
            commit, err = self._find(repo_id, rev)
            return err or self.json(200, self._info(repo_id, commit))
        m = re.fullmatch(r"/api/models/([^/]+/[^/]+)/tree/([^/]+)(?:/(.*))?", path)
        if m:
            repo_id, rev, sub = m.group(1), m.group(2), (m.group(3) or "").strip("/")
            commit, err = self._find(repo_id, rev)
            if err:
                return err
            files = [{"type": "file", "oid": hashlib.sha1(d).hexdigest(), "size": len(d), "path": p}
                     for p, d in commit["files"].items() if not sub or p.startswith(sub + "/")]
            if sub and not files:
                return self.error(404, "EntryNotFound", f"{sub} does not exist on {rev}")
            return self.json(200, files)
        m = re.fullmatch(r"/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path)
        if m:
            repo_id, rev, file = m.groups()
            commit, err = self._find(repo_id, rev)
            if err:
                return err
            if commit["broken"] or file not in commit["files"] or file in commit.get("missing", ()):
                return self.error(404, "EntryNotFound", f"{file} does not exist on {rev}")
            data = commit["files"][file]
            headers = {"X-Repo-Commit": commit["sha"], "ETag": f'"{hashlib.sha1(data).hexdigest()}"',
                       "Content-Type": "application/octet-stream"}
            return 200, headers, data
        return self.error(404, None, f"no route {path}")

    def route(self, method: str, raw_path: str, headers, body: bytes) -> tuple[int, dict, bytes]:
        """Every request: the model routes (a sibling fake adds datasets by overriding this)."""
        return self.handle(method, raw_path)

    def _find(self, repo_id: str, rev: str):
        if repo_id not in self.repos:
            return None, self.error(404, "RepoNotFound", "Repository not found")
        commit = self._commit(repo_id, rev)
        if commit is None:
            return None, self.error(404, "RevisionNotFound", f"Invalid rev id: {rev}")
        return commit, None

    @staticmethod
    def json(status: int, obj) -> tuple[int, dict, bytes]:
        return status, {"Content-Type": "application/json"}, json.dumps(obj).encode()

    @staticmethod
    def error(status: int, code: str | None, message: str) -> tuple[int, dict, bytes]:
        headers = {"Content-Type": "application/json", "X-Error-Message": message}
        if code:
            headers["X-Error-Code"] = code
        return status, headers, json.dumps({"error": message}).encode()

    # --- lifecycle ------------------------------------------------------------------------------
    def start(self) -> "FakeHub":
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self, method: str):
                with hub._lock:
                    hub.requests.append((method, self.path))
                length = int(self.headers.get("Content-Length") or 0)
                sent = self.rfile.read(length) if length else b""
                status, headers, body = hub.route(method, self.path, self.headers, sent)
                status, headers, body = _ranged(self.headers.get("Range"), status, headers, body)
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if method == "GET":
                    self.wfile.write(body)

            def do_GET(self):
                self._serve("GET")

            def do_HEAD(self):
                self._serve("HEAD")

            def do_POST(self):
                self._serve("POST")

            def log_message(self, *args):
                pass

        return self._listen(Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"


def _ranged(spec: str | None, status: int, headers: dict, body: bytes) -> tuple[int, dict, bytes]:
    """A file answer cut to `Range: bytes=a-b` (206 with Content-Range), as the Hub's CDN answers."""
    m = re.fullmatch(r"bytes=(\d*)-(\d*)", spec or "")
    if status != 200 or not m or "X-Repo-Commit" not in headers:
        return status, headers, body
    size = len(body)
    a = int(m.group(1)) if m.group(1) else max(size - int(m.group(2) or 0), 0)
    b = int(m.group(2)) if m.group(1) and m.group(2) else size - 1
    if a >= size:
        return 416, {**headers, "Content-Range": f"bytes */{size}"}, b""
    b = min(b, size - 1)
    return 206, {**headers, "Content-Range": f"bytes {a}-{b}/{size}"}, body[a:b + 1]


def tiny_seq_cls(dst: Path, *, layers: int = 2, seed: int = 0) -> Path:
    """A small sequence-classification RM (one logit) built from the embedded MiniLM: its first
    `layers` transformer layers and a seeded random head, saved with its tokenizer."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from tasks.models.encoders import EMBEDDED

    src = EMBEDDED["all-MiniLM-L6-v2"]()
    torch.manual_seed(seed)
    model = AutoModelForSequenceClassification.from_pretrained(src, num_labels=1, num_hidden_layers=layers)
    model.save_pretrained(dst)
    AutoTokenizer.from_pretrained(src).save_pretrained(dst)
    return Path(dst)
