"""`prbench diff`'s headline: the leaderboard per RM × strategy and the primary correlation, each change
with the new CI and whether it is beyond noise, never more than 40 lines; the rest behind --all.
Metrics files at two git commits (git only: the headline reads them with `git show`)."""
import json
import subprocess
from pathlib import Path

from tasks.downstream.correlation import diff, headline


def _board(acc: dict) -> dict:
    """leaderboard.json with micro accuracy and a ±0.1 CI per (rm, strategy)."""
    rms = {}
    for (rm, s), a in acc.items():
        rms.setdefault(rm, {})[s] = {"micro": {"accuracy": a, "ci": [round(a - 0.1, 4), round(a + 0.1, 4)], "n": 40}}
    return {"rms": rms}


def _primary(estimate: float, ci: list) -> dict:
    return {"primary": {"benchmark": "personalised", "strategy": "raw_profile", "method": "bon", "statistic": "spearman",
                        "estimate": estimate, "ci": ci, "p": 0.012, "significant": True}}


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True, capture_output=True)


def _write(repo: Path, board: dict, corr: dict) -> None:
    (repo / "metrics").mkdir(exist_ok=True)
    (repo / headline.LEADERBOARD).write_text(json.dumps(board))
    (repo / headline.CORRELATION).write_text(json.dumps(corr))


def _repo(tmp_path: Path, old: tuple, new: tuple) -> Path:
    _git(tmp_path, "init", "-q")
    _write(tmp_path, *old)
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "v1")
    _write(tmp_path, *new)   # the workspace
    return tmp_path


def test_each_change_has_its_interval_and_a_noise_verdict(tmp_path):
    old = _board({("a", "none"): 0.5, ("b", "none"): 0.6, ("c", "none"): 0.7})
    new = _board({("a", "none"): 0.8, ("b", "none"): 0.65, ("c", "none"): 0.7})
    repo = _repo(tmp_path, (old, _primary(0.1, [-0.2, 0.4])), (new, _primary(0.6, [0.3, 0.8])))
    rows = headline.headline_rows("HEAD", None, cwd=repo)
    assert [r["what"] for r in rows] == ["primary: personalised/raw_profile vs bon spearman", "a · none", "b · none"]
    assert [r["beyond"] for r in rows] == [True, True, False]   # 0.1 outside [0.3, 0.8]; 0.5 outside [0.7, 0.9]; 0.6 inside
    lines = headline.format_headline(rows, "HEAD", None, others=7).splitlines()
    a = next(line.split() for line in lines if line.startswith("a · none"))
    assert a[3:] == ["0.5000", "0.8000", "+0.3000", "[0.7000,", "0.9000]", "yes"]
    assert next(line for line in lines if line.startswith("b · none")).endswith("no")
    assert "p=0.012" in lines[2] and lines[-1] == "7 other changed metric(s): `prbench diff HEAD --all`"


def test_a_long_leaderboard_stays_within_40_lines_and_the_rest_is_behind_all(tmp_path):
    cells = [(f"rm{i:02d}", s) for i in range(30) for s in ("none", "raw_profile", "planner", "oracle")]
    old = _board({c: 0.5 for c in cells})
    new = _board({c: 0.5 + 0.001 * k for k, c in enumerate(cells, 1)})   # every one of the 120 changed
    repo = _repo(tmp_path, (old, {}), (new, {}))
    rows = headline.headline_rows("HEAD", None, cwd=repo)
    assert len(rows) == 120
    out = headline.format_headline(rows, "HEAD", None, others=0).splitlines()
    assert len(out) <= 40, "docs/releases.md: at most 40 lines"
    assert out[-1].startswith(f"{120 - (headline.MAX_LINES - 4)} more headline row(s)") and out[-1].endswith("--all`")
    assert out[2].startswith("rm29 · oracle"), "beyond noise and largest change first"


def test_all_lists_every_changed_metric_with_its_interval(tmp_path):
    repo = _repo(tmp_path, (_board({("a", "none"): 0.5}), {}), (_board({("a", "none"): 0.8}), {}))
    raw = {headline.LEADERBOARD: {"rms.a.none.micro.accuracy": {"old": 0.5, "new": 0.8, "diff": 0.3},
                                  "rms.a.none.micro.n": {"old": 40, "new": 40}}}
    rows = diff.with_intervals(diff.diff_rows(raw, all_metrics=True), None, cwd=repo)
    assert [(r["metric"], r["ci"], r["beyond"]) for r in rows] == [
        ("rms.a.none.micro.accuracy", [0.7, 0.9], True), ("rms.a.none.micro.n", None, None)]
    table = diff.format_diff(rows, "HEAD", None).splitlines()
    assert table[1].split()[-3:] == ["new", "CI", "beyond"] or table[1].endswith("beyond noise")
    assert table[2].split()[-3:] == ["[0.7000,", "0.9000]", "yes"]


def _scalars(obj) -> int:
    """The rows `dvc metrics show` / `diff` print for a metrics file: its scalar leaves (lists are left out)."""
    return sum(_scalars(v) for v in obj.values()) if isinstance(obj, dict) else int(not isinstance(obj, list))


def test_headline_metrics_file_is_short_for_dvc_and_holds_the_intervals():
    from tests.conftest import ROOT

    board = json.loads((ROOT / headline.LEADERBOARD).read_text())   # the committed run: 6 RMs × 4 strategies + the ladder
    controls = json.loads((ROOT / headline.CORRELATION).read_text())["positive_controls"]
    assert controls, "the committed run has its positive-control ladder"
    out = headline.headline_metrics(board, {**_primary(0.6, [0.3, 0.8]), "positive_controls": controls})
    ranked = {(rm, s) for rm, per in board["rms"].items() for s, e in per.items()
              if not e["evaluation_only"] and rm not in controls}   # the ladder's one number is the primary test
    assert {(rm, s) for rm, per in out["leaderboard"].items() for s in per} == ranked
    rm, s = sorted(ranked)[0]
    assert out["leaderboard"][rm][s] == {"accuracy": board["rms"][rm][s]["micro"]["accuracy"],
                                         "ci": board["rms"][rm][s]["micro"]["ci"]}
    assert out["primary"]["estimate"] == 0.6 and out["primary"]["ci"] == [0.3, 0.8]
    assert _scalars(out) <= headline.MAX_LINES, "dvc metrics diff --targets metrics/headline.json fits a screen"


def test_a_hundred_null_baselines_changed_stay_behind_the_real_rms_within_40_lines(tmp_path):
    """Reseeding a hundred random RMs moves each by far more than noise; the three real RMs' small changes
    still lead the headline, the null baselines are labelled and come after, and it stays within 40 lines."""
    nulls = [f"random-{i:03d}" for i in range(100)]
    real = {("bradley-terry", "none"): (0.60, 0.62), ("similarity", "none"): (0.55, 0.56), ("smollm2", "none"): (0.5, 0.51)}
    old = _board({**{(rm, "none"): 0.0 for rm in nulls}, **{k: v[0] for k, v in real.items()}})
    new = _board({**{(rm, "none"): 1.0 for rm in nulls}, **{k: v[1] for k, v in real.items()}})
    corr = {"null_baselines": nulls}
    repo = _repo(tmp_path, (old, corr), (new, corr))
    rows = headline.headline_rows("HEAD", None, cwd=repo)
    assert len(rows) == 103
    out = headline.format_headline(rows, "HEAD", None, others=0).splitlines()
    assert len(out) <= 40, "docs/releases.md: at most 40 lines"
    assert [line.split()[0] for line in out[2:5]] == ["bradley-terry", "similarity", "smollm2"], out[:6]
    assert out[5].startswith("random-000 · none (null baseline)") and out[5].split()[-1] == "yes"
    assert out[-1].startswith(f"{103 - (headline.MAX_LINES - 4)} more headline row(s)")
    short = headline.headline_metrics(new, corr)
    assert set(short["leaderboard"]) == {rm for rm, _ in real}
    assert short["null_baselines"] == {"none": {"rms": 100, "min": 1.0, "max": 1.0}}
    assert _scalars(short) <= 40, "dvc metrics diff --targets metrics/headline.json fits a screen"
