"""A newcomer's mistakes in params.yaml (issue 34), each edited into a copy of the shipped file as a person
would type it: `prbench params` answers with one line naming the file, the line or key and the value (and
the right name for a misspelling), never a traceback; every problem of a file at once; a setting that does
less than it says is a notice; `prbench --help` works whatever params.yaml holds."""
import os
import re
import subprocess
import sys

import pytest

from flows.cli import main
from tests.conftest import ROOT

TEXT = (ROOT / "params.yaml").read_text()


def _edit(old: str, new: str, text: str = TEXT) -> str:
    assert text.count(old) >= 1, old
    return text.replace(old, new, 1)


def _project(tmp_path, text: str):
    """A project folder: the edited file, the repo's prompts and data (the paths the file names)."""
    (tmp_path / "params.yaml").write_text(text)
    for name in ("prompts", "data", "params-paper.yaml", "params-regenerate.yaml"):
        (tmp_path / name).symlink_to(ROOT / name)
    return tmp_path


def _params(tmp_path, capsys, monkeypatch, text: str) -> tuple[int, str, str]:
    monkeypatch.chdir(_project(tmp_path, text))
    rc = main(["params"])
    out = capsys.readouterr()
    return rc, out.out.strip(), out.err.strip()


RMS = "    length-shorter: {kind: length-shorter}\n"
LONGER = "    length-longer: {kind: length-longer}"
LONGER_LINE = TEXT.splitlines().index(LONGER) + 1   # the file's line of the first RM (params.yaml grows)
MISTAKES = {   # what a user typed -> the one line they get
    "a tab indents a key": (_edit("  seed: 2604", "\tseed: 2604"),
                            "params.yaml:10:1: YAML syntax error: found character '\\t' that cannot start any token "
                            "(a tab: YAML indents with spaces only)"),
    "an empty file": ("", "params.yaml: empty: no params groups"),
    "two RMs of one name": (_edit(RMS, RMS + "    length-longer: {kind: random}\n"),
                            f"params.yaml:{LONGER_LINE + 2}:5: scoring.rms.length-longer: duplicate key (first at "
                            f"line {LONGER_LINE}); YAML keeps only the last"),
    "a data folder that is not there": (_edit("path: data/sample/rewardbench", "path: data/sample/rewardbnech"),
                                        "params.yaml: ingest.path: no such file or folder 'data/sample/rewardbnech' "
                                        "(did you mean 'data/sample/rewardbench'?)"),
    "a misspelt prompt file": (_edit("prompt: prompts/planner.txt", "prompt: prompts/planer.txt"),
                               "params.yaml: rubrics.prompt: no such file 'prompts/planer.txt' (did you mean "
                               "'prompts/planner.txt'?)"),
    "context_k above k": (_edit("  context_k: 4 ", "  context_k: 12"),
                          "params.yaml: profiles.context_k: 12 is more than profiles.k (10): the profile text RMs see: "
                          "only the top profiles.k posts are ranked"),
    "a negative bootstrap": (_edit("  bootstrap: 1000\n  ci: 0.95", "  bootstrap: -5\n  ci: 0.95"),
                             "params.yaml: leaderboard.bootstrap: -5 is out of range: must be >= 1"),
    "a CI level above 1": (_edit("  bootstrap: 1000\n  ci: 0.95", "  bootstrap: 1000\n  ci: 1.5"),
                           "params.yaml: leaderboard.ci: 1.5 is out of range: must be > 0 and < 1"),
    "generations that do not divide the batch": (_edit("num_generations: 4 ", "num_generations: 3 "),
                                                 "params.yaml: rl.train.num_generations: 3 does not divide "
                                                 "rl.train.batch_size (4)"),
    "a micro batch that does not divide the mini batch": (_edit("micro_batch_size: 4 ", "micro_batch_size: 3 "),
                                                          "params.yaml: rl.train.micro_batch_size: 3 does not divide "
                                                          "rl.train.mini_batch_size (4)"),
    "an RL RM that is not an RM": (_edit("  rms:\n  - length-shorter", "  rms:\n  - length-shortr"),
                                   "params.yaml: rl.rms[0]: 'length-shortr' is not an RM under scoring.rms "
                                   "(did you mean 'length-shorter'?)"),
    "an RL RM listed twice": (_edit("  rms:\n  - length-shorter", "  rms:\n  - length-shorter\n  - length-shorter"),
                              "params.yaml: rl.rms: 'length-shorter' is listed twice: one rl_train stage per name"),
    "no RL list (null)": (_edit("  rms:\n  - length-shorter", "  rms:"),
                          "params.yaml: rl.rms: None is not allowed: a list of strings"),
    "an excluded RM that is not one": (_edit("  exclude_rms:\n  - (oracle)", "  exclude_rms:\n  - (orcale)"),
                                       "params.yaml: correlation.exclude_rms[0]: '(orcale)' is not an RM under "
                                       "scoring.rms (did you mean '(oracle)'?)"),
    "a strategy typo": (_edit("  - raw_profile\n", "  - raw-profile\n"),
                        "params.yaml: scoring.strategies[1]: unknown name 'raw-profile' (did you mean 'raw_profile'?)"),
}
# issue 47: names the data defines, lists that are sets, thresholds in order
LAMP_QA = "valid: Art_and_Entertainment, Lifestyle_and_Personal_Development, Society_and_Culture"
SPLITS = "valid: train, validation, test"
RB2_SUBSETS = "valid: Factuality, Precise IF, Math, Safety, Focus, Ties"
COVERED = "an aspect is covered partly at a lower similarity than well"
BON_JUDGE = "    partly: 0.35\n    well: 0.5\n    prompt: prompts/judge_all.txt"
MISTAKES.update({
    "a misspelt LaMP-QA config": (_edit("  - Society_and_Culture", "  - Society_and_Cultre"),
                                  "params.yaml: ingest.configs[2]: 'Society_and_Cultre' is not a LaMP-QA config (did "
                                  f"you mean 'Society_and_Culture'?); {LAMP_QA}"),
    "a config listed twice": (_edit("  - Art_and_Entertainment\n", "  - Art_and_Entertainment\n  - Art_and_Entertainment\n"),
                              "params.yaml: ingest.configs: 'Art_and_Entertainment' is listed twice: each is read once"),
    "a misspelt split to ingest": (_edit("  splits:\n  - train\n  - test\n  on_error", "  splits:\n  - train\n  - tset\n  on_error"),
                                   "params.yaml: ingest.splits[1]: 'tset' is not allowed: one of train, validation, test "
                                   "(did you mean 'test'?)"),
    "a misspelt split to score": (_edit("  - test\n  per_domain_limit: 2              # cost control: first N test",
                                        "  - tets\n  per_domain_limit: 2              # cost control: first N test"),
                                  f"params.yaml: scoring.splits[0]: 'tets' is not a LaMP-QA split (did you mean 'test'?); {SPLITS}"),
    "a misspelt leaderboard split": (_edit("  split: test", "  split: Test"),
                                     f"params.yaml: leaderboard.split: 'Test' is not a LaMP-QA split (did you mean 'test'?); "
                                     f"{SPLITS}"),
    "a BoN domain the data does not have": (_edit("  domains:  ", "  domains: [Arts]"),
                                            "params.yaml: bon.domains[0]: 'Arts' is not a domain ingest reads (ingest.configs) "
                                            "(did you mean 'Art'?); valid: Art, Lifestyle, Society"),
    "a subset not on the benchmark's card": (_edit("    subset:\n", "    subset: Fatuality\n"),
                                             "params.yaml: benchmarks.rb2-demo.subset: no subset 'Fatuality' in rewardbench2 "
                                             f"(did you mean 'Factuality'?); {RB2_SUBSETS}"),
    "a strategy listed twice": (_edit("  - raw_profile\n", "  - raw_profile\n  - raw_profile\n"),
                                "params.yaml: scoring.strategies: 'raw_profile' is listed twice: each strategy is one "
                                "column of the leaderboard"),
    "a benchmark's RM listed twice": (_edit("    rms:\n    - length-longer\n", "    rms:\n    - length-longer\n    - length-longer\n"),
                                      "params.yaml: benchmarks.rb2-demo.rms: 'length-longer' is listed twice: each RM is "
                                      "scored on it once"),
    "a comparison of a benchmark with itself": (_edit("  - - personalised\n    - generic", "  - - generic\n    - generic"),
                                                "params.yaml: correlation.comparisons[0]: compares 'generic' with itself"),
    "judge thresholds out of order": (_edit("    partly: 0.35 ", "    partly: 0.6  "),
                                      f"params.yaml: pairs.judge.partly: 0.6 is not below pairs.judge.well (0.5): {COVERED}"),
    "BoN judge thresholds equal": (_edit(BON_JUDGE, BON_JUDGE.replace("well: 0.5", "well: 0.35")),
                                   f"params.yaml: bon.judge.partly: 0.35 is not below bon.judge.well (0.35): {COVERED}"),
    "a BoN k above max_k": (_edit("  bon_k: 2 ", "  bon_k: 8 "),
                            "params.yaml: correlation.bon_k: 8 is not a k bon_report computes: k = 1, 2, 4 (powers of 2 "
                            "up to bon.max_k (4) and bon.n (4))"),
    "a BoN k that is no power of two": (_edit("  bon_k: 2 ", "  bon_k: 3 "),
                                        "params.yaml: correlation.bon_k: 3 is not a k bon_report computes"),
})


def test_the_cases_edit_what_they_name():
    assert "  rms:\n  - length-shorter" in TEXT.split("\nrl:")[1], "rl.rms is the first such list after rl:"
    assert TEXT.splitlines()[LONGER_LINE] == RMS.rstrip("\n"), "length-shorter follows length-longer"


@pytest.mark.parametrize("case", sorted(MISTAKES))
def test_each_mistake_is_one_line_naming_it(tmp_path, capsys, monkeypatch, case):
    text, line = MISTAKES[case]
    rc, out, err = _params(tmp_path, capsys, monkeypatch, text)
    assert rc == 1 and out == "", (out, err)
    assert len(err.splitlines()) == 1 and err.startswith(line), err
    assert "Traceback" not in err


def test_every_problem_of_a_file_at_once(tmp_path, capsys, monkeypatch):
    text = TEXT
    for case in ("context_k above k", "a CI level above 1", "generations that do not divide the batch",
                 "a strategy typo", "a misspelt prompt file"):
        text = _edit(*_diff(MISTAKES[case][0]), text)
    rc, _, err = _params(tmp_path, capsys, monkeypatch, text)
    keys = {re.match(r"params.yaml: ([\w.\[\]]+):", line).group(1) for line in err.splitlines()}
    assert rc == 1 and keys == {"profiles.context_k", "leaderboard.ci", "rl.train.num_generations",
                                "scoring.strategies[1]", "rubrics.prompt"}, err


def _diff(edited: str) -> tuple[str, str]:
    """(old, new) lines of a one-line edit of TEXT."""
    a, b = TEXT.splitlines(keepends=True), edited.splitlines(keepends=True)
    i = next(i for i, (x, y) in enumerate(zip(a, b)) if x != y)
    return a[i], b[i]


def test_max_k_above_n_runs_with_a_notice(tmp_path, capsys, monkeypatch):
    text = _edit("  max_k: 4 ", "  max_k: 16")
    rc, out, err = _params(tmp_path, capsys, monkeypatch, text)
    assert rc == 0 and err == ""
    assert out.splitlines() == ["params.yaml: valid (common.fidelity: corrected)", "params.yaml: notice: bon.max_k: 16 is more than bon.n (4): "
                                "best-of-k needs k samples, so k = 8, 16 are skipped (listed in metrics/bon.json)"]


def test_a_split_ingest_does_not_read_runs_with_a_notice(tmp_path, capsys, monkeypatch):
    """A split that exists but is not ingested: the stages reading it find no question, so it is said, not refused."""
    text = _edit("  - test\n  per_domain_limit: 2              # cost control: first N test",
                 "  - test\n  - validation\n  per_domain_limit: 2              # cost control: first N test")
    rc, out, err = _params(tmp_path, capsys, monkeypatch, text)
    assert rc == 0 and err == "", err
    assert out.splitlines()[1:] == ["params.yaml: notice: scoring.splits: 'validation' not in ingest.splits (test, train): "
                                    "no question of it is read"]


def test_help_and_doc_work_whatever_params_yaml_holds(tmp_path, capsys, monkeypatch):
    """The tab used to break every command at import (flows/__init__ reads common.torch_threads)."""
    _project(tmp_path, MISTAKES["a tab indents a key"][0])
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", "flows.cli", "--help"], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.startswith("usage: prbench") and out.stderr == "", out.stderr[-2000:]
    monkeypatch.chdir(tmp_path)
    assert main(["params", "--doc"]) == 0
    assert "leaderboard.ci  a number, > 0 and < 1 = 0.95" in capsys.readouterr().out
