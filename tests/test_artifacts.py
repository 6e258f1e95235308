"""Artifacts are schema-checked, atomic and byte-deterministic."""
import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from tasks.core.artifacts import file_hash, write_json, write_table
from tasks.core.schemas import SCHEMAS, SchemaMismatch
from tests.conftest import ROOT

ROW = {"question_id": "q", "item_id": "q_0", "position": 0, "category": "c", "text": "t"}


def test_same_rows_same_bytes(tmp_path):
    a = write_table([ROW, dict(ROW, item_id="q_1", position=1)], tmp_path / "a.parquet", "profiles")
    b = write_table([ROW, dict(ROW, item_id="q_1", position=1)], tmp_path / "b.parquet", "profiles")
    assert file_hash(a) == file_hash(b)


def test_wrong_columns_raise_and_leave_nothing(tmp_path):
    bad = pa.table({"question_id": ["q"], "oops": [1]})
    with pytest.raises(SchemaMismatch, match="artifact 'profiles': columns"):
        write_table(bad, tmp_path / "x.parquet", "profiles")
    assert list(tmp_path.iterdir()) == []


def test_wrong_types_raise(tmp_path):
    with pytest.raises(SchemaMismatch, match="artifact 'profiles'"):
        write_table(pa.table({k: [v if k != "position" else "zero"] for k, v in ROW.items()}),
                    tmp_path / "x.parquet", "profiles")


def test_failed_write_keeps_previous_file(tmp_path, monkeypatch):
    path = write_table([ROW], tmp_path / "a.parquet", "profiles")
    before = file_hash(path)
    import pyarrow.parquet as pq

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(pq, "write_table", boom)
    with pytest.raises(OSError):
        write_table([ROW, ROW], path, "profiles")
    assert file_hash(path) == before and [p.name for p in tmp_path.iterdir()] == ["a.parquet"]


def test_json_is_sorted_and_stable(tmp_path):
    write_json({"b": 1, "a": [1, 2]}, tmp_path / "m.json")
    assert (tmp_path / "m.json").read_text() == '{\n  "a": [\n    1,\n    2\n  ],\n  "b": 1\n}\n'


def test_every_schema_is_named():
    assert set(SCHEMAS) >= {"questions", "profiles", "pairs", "quarantine", "ranked_profile", "profile_context"}


# --- a write that fails midway, after bytes reached the disk --------------------------------------
# The child process builds a payload far over LIMIT bytes, then caps the size of any file it writes
# (RLIMIT_FSIZE, SIGXFSZ ignored): the write fails with EFBIG once LIMIT bytes are on disk, as on a
# full disk. A writer that writes in place has by then destroyed the old file.
LIMIT = 64 * 1024
CHILD = r"""
import errno, json, resource, secrets, signal, sys
from pathlib import Path

writer, path, LIMIT = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
big = secrets.token_hex(600_000)   # 1.2 MB that no compression shrinks below LIMIT
if writer == "write_table":
    from tasks.core.artifacts import write_table
    rows = [{"question_id": "q", "item_id": f"q_{i}", "position": i, "category": "c", "text": big[i * 4000:(i + 1) * 4000]}
            for i in range(300)]
    run = lambda: write_table(rows, path, "profiles")
elif writer == "write_json":
    from tasks.core.artifacts import write_json
    run = lambda: write_json({"big": big}, path)
elif writer == "write_text":
    from tasks.core.artifacts import write_text
    run = lambda: write_text(big, path)
elif writer == "plot":
    import numpy as np
    from tasks.core.plots import plt, save
    fig, ax = plt.subplots(figsize=(8, 8))
    ax.imshow(np.random.default_rng(0).random((900, 900)))
    fig.canvas.draw()   # fonts and caches now, before the cap
    run = lambda: save(fig, path)
elif writer == "leaderboard_csv":
    from tasks.stages.leaderboard import MICRO, write_plot_data
    rows = [{"rm": big[i * 40:(i + 1) * 40], "strategy": "none", "evaluation_only": False, "accuracy": 0.5,
             "ci_low": 0.4, "ci_high": 0.6, "domain": MICRO} for i in range(20_000)]
    run = lambda: write_plot_data(rows, path)
elif writer == "params_rm":
    from tasks.core.params_edit import set_rm
    run = lambda: set_rm(path, "new-rm", {"kind": "random"})
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
try:
    run()
except OSError as exc:
    print(json.dumps({"failed": str(exc), "efbig": exc.errno == errno.EFBIG or "too large" in str(exc).lower()}))
else:
    print(json.dumps({"failed": None}))
"""


def _old_file(writer: str, path: Path) -> None:
    """What was there before: a small valid file (params: the real params.yaml, 1 MB with a comment)."""
    if writer == "write_table":
        write_table([ROW], path, "profiles")
    elif writer == "params_rm":
        path.write_text((ROOT / "params.yaml").read_text() + "# " + "x" * 1_000_000 + "\n")
    else:
        path.write_bytes(b"the previous version\n")


@pytest.mark.parametrize("writer", ["write_table", "write_json", "write_text", "plot", "leaderboard_csv", "params_rm"])
def test_a_write_failing_midway_keeps_the_old_file_and_leaves_no_temporary(tmp_path, writer):
    folder = tmp_path / "out"
    folder.mkdir()
    path = folder / {"write_table": "t.parquet", "plot": "p.png", "leaderboard_csv": "l.csv",
                     "params_rm": "params.yaml"}.get(writer, "m.json")
    _old_file(writer, path)
    before = path.read_bytes()
    child = subprocess.run([sys.executable, "-c", CHILD, writer, str(path), str(LIMIT)], cwd=ROOT, capture_output=True,
                           text=True, timeout=120)
    assert child.returncode == 0, child.stderr[-3000:]
    result = json.loads(child.stdout.strip().splitlines()[-1])
    assert result["failed"] and result["efbig"], f"the write must fail on the size cap, midway: {result}"
    assert path.exists() and path.read_bytes() == before, "the old file is intact"
    assert [p.name for p in folder.iterdir()] == [path.name], "no temporary file remains"


MODE_CHILD = """
import os, stat, sys
os.umask(int(sys.argv[2], 8))
from tasks.core.artifacts import write_json, write_table, write_text
out = sys.argv[1]
write_text("page", out + "/index.html")
write_json({"a": 1}, out + "/m.json")
write_table([{"question_id": "q", "item_id": "q_0", "position": 0, "category": "c", "text": "t"}], out + "/t.parquet", "profiles")
print(" ".join(oct(stat.S_IMODE(os.stat(os.path.join(out, f)).st_mode)) for f in ("index.html", "m.json", "t.parquet")))
"""


@pytest.mark.parametrize("umask, mode", [("022", "0o644"), ("027", "0o640")])
def test_written_files_get_the_mode_the_umask_gives_not_mkstemps_0600(tmp_path, umask, mode):
    """A report on a shared box: others in the group (or everyone) can open what a run writes."""
    child = subprocess.run([sys.executable, "-c", MODE_CHILD,
                            str(tmp_path), umask], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert child.returncode == 0, child.stderr[-3000:]
    assert child.stdout.split() == [mode] * 3
