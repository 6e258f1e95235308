"""Cases the report page's rows needed that their own test files lacked (docs/rules.md, the page): a cache folder's
every file is left out of the code version, not only its .pyc files; an RM whose published score is none has no
number on that side, not a 0."""
from __future__ import annotations

import hashlib

from tasks.core.artifacts import write_table
from tasks.downstream.correlation import published
from tasks.ops.report import provenance as PV
from tests.test_rules_published import _row


def test_a_cache_folder_is_left_out_whole(tmp_path):
    (tmp_path / "tasks/__pycache__").mkdir(parents=True)
    (tmp_path / "tasks/a.py").write_text("x = 1\n")
    v = PV.code_version(tmp_path, ["tasks"])
    assert v == hashlib.sha256(b"tasks/a.py\0" + PV.file_hash(tmp_path / "tasks/a.py").encode() + b"\0").hexdigest()
    (tmp_path / "tasks/__pycache__/a.cpython-312.pyc.140230").write_bytes(b"\0")   # py_compile's temporary file
    assert PV.code_version(tmp_path, ["tasks"]) == v


def test_an_rm_without_a_published_score_has_no_number_not_zero(tmp_path):
    folder = tmp_path / "rb2"
    folder.mkdir()
    write_table([_row("rm-b", "none", "m1", [0.9], [0.1, 0.2, 0.3])], folder / "rm-b.parquet", "list_scores")
    write_table([{**_row("judge", "none", "m1", [], []), "method": "pairwise"}], folder / "judge.parquet", "list_scores")
    side = published.load_published(["rb2"], {"rb2": str(folder)}, "none")["rb2:published"]
    assert side.fixed == {"rm-b": 1.0}, "a pairwise judge scores no item pointwise: no published number"
