"""What the fuzzing of issue 60 found (tests/test_fuzz_params.py, tests/test_fuzz_cli.py), each kept as a case:
the mutant or the command line it drew, and the one line it gets now. Before the fixes each was a traceback,
a file accepted and then failing in its stage, or more lines than the one mistake (docs/testing.md lists them)."""
import pytest
import yaml

from flows.cli import main
from tests.conftest import ROOT
from tests.params_build import build

BASE = yaml.safe_load((ROOT / "params.yaml").read_text())


def edited(change) -> str:
    import copy

    p = copy.deepcopy(BASE)
    change(p)
    return yaml.safe_dump(p, sort_keys=False)


def _set(path: str, value):
    def change(p):
        *parents, last = path.split(".")
        for part in parents:
            p = p[part]
        p[last] = value
    return change


def _rename(path: str, new: str):
    def change(p):
        *parents, last = path.split(".")
        for part in parents:
            p = p[part]
        p[new] = p.pop(last)
    return change


FOUND = {   # what the fuzz drew -> the line it gets (its start)
    "an RM kind given as a list (a traceback: a list is no dict key)":
        (_set("scoring.rms.random.kind", ["x", "y"]), "params.yaml: scoring.rms.random.kind: ['x', 'y'] is not allowed: a "
                                                    "kind's name"),
    "an empty prompt path (accepted, then IsADirectoryError in rl_train)":
        (_set("rl.prompt", ""), "params.yaml: rl.prompt: an empty path: name a file"),
    "a benchmarks entry left empty (accepted, then KeyError 'source' in bench_score)":
        (_set("benchmarks.prism-demo", {}), "params.yaml: benchmarks.prism-demo: empty: it needs source, rms"),
    "a watch rule's source given as a list (a traceback)":
        (_set("releases.watch", [{"source": ["hub"], "author": "x"}]), "params.yaml: releases.watch[0].source: unknown name"),
    "a watch rule's limit given as a word (accepted, then the Hub client's error at serve time)":
        (_set("releases.watch", [{"source": "hub", "author": "x", "limit": "many"}]),
         "params.yaml: releases.watch[0].limit: 'many' is not allowed: an integer >= 1 or null"),
    "a watch rule's source in capitals (the typo looked for among valid keys: 'search')":
        (_set("releases.watch", [{"SOURCE": "hub", "author": "x", "search": "Reward"}]),
         "params.yaml: releases.watch[0].SOURCE: not an option (did you mean 'source'?)"),
    "llms misspelt as a group (its names then said again, 4 lines)":
        (_rename("llms", "lms"), "params.yaml: lms: unknown key (did you mean 'llms'?)"),
    "the kind field misspelt (the line named 'kind', not the typo)":
        (_rename("scoring.rms.random.kind", "kidn"), "params.yaml: scoring.rms.random.kidn: not an option (did you mean 'kind'?)"),
    "correlation.benchmarks a number (a traceback in the reference check)":
        (_set("correlation.benchmarks", 7), "params.yaml: correlation.benchmarks: 7 is not allowed: a list of strings"),
    "an LLM option out of range (the plug-in's range was dropped with the annotation)":
        (_set("llms.smollm2.n_ctx", 0), "params.yaml: llms.smollm2.n_ctx: 0 is not allowed: an integer >= 1"),
    "a mixture weight above 1 (accepted, then refused when its stage built the RM)":
        (_set("scoring.rms.ladder-03.weight", 1.5),
         "params.yaml: scoring.rms.ladder-03.weight: 1.5 is not allowed: a number >= 0 and <= 1"),
    "a cron expression that is none (accepted, then refused when serve registered its deployments)":
        (_set("releases.reproduce_cron", "daily at 3"), "params.yaml: releases.reproduce_cron: 'daily at 3' is not a cron"),
}


@pytest.fixture
def project(tmp_path, monkeypatch):
    for name in ("prompts", "data", "metrics", "params-paper.yaml", "params-regenerate.yaml"):
        (tmp_path / name).symlink_to(ROOT / name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("case", sorted(FOUND))
def test_each_finding_is_one_line(project, capsys, case):
    change, line = FOUND[case]
    (project / "params.yaml").write_text(edited(change))
    assert main(["params"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(line), err


def test_an_emptied_group_is_at_most_three_lines(project, capsys):
    """`scoring: {}` in the paper's file: every RM name it lists elsewhere was a line of its own (5 lines)."""
    text = yaml.safe_load((ROOT / "params-paper.yaml").read_text())
    text["scoring"] = {}
    (project / "params.yaml").write_text(yaml.safe_dump(text, sort_keys=False))
    assert main(["params"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert 1 <= len(err) <= 3 and all("scoring." in line for line in err), err
    rl_rms = text["rl"]["rms"]
    missing = [rm for rm in rl_rms if rm not in yaml.safe_load((ROOT / "params.yaml").read_text())["scoring"]["rms"]
               and rm not in ("length-longer", "random", "similarity", "bradley-terry")]
    assert missing and all(f"'{rm}'" in "\n".join(err) for rm in missing), ("every name it lost is said", missing, err)


ARGV = {   # a command line the fuzz drew -> the line it gets
    "a port above 65535 (OverflowError traceback)": (["serve", "--port", "99999"], 2, "'99999': a port, 1 or more and 65535 or less"),
    "a cron flag that is none (accepted until serve registered its deployments)":
        (["serve", "--cron", "abc"], 1, "--cron: 'abc' is not a cron expression"),
    "release score without --name (its default refused by its own check)":
        (["release", "score", "org/model"], 1, "prbench release score: no Prefect server at"),
    "another file given as --params (8 lines, one per group it lacks)":
        (["score", "--kind", "random", "--params", "metrics/leaderboard.json"], 1,
         "metrics/leaderboard.json: no params group in it"),
}


@pytest.mark.parametrize("case", sorted(ARGV))
def test_each_command_line_finding_is_clear(project, capsys, monkeypatch, case):
    argv, code, line = ARGV[case]
    (project / "params.yaml").write_text((ROOT / "params.yaml").read_text())
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    try:
        rc = main(argv)
    except SystemExit as exc:
        rc = exc.code
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == code and "Traceback" not in "\n".join(err), err
    assert (len(err) == 1 if code == 1 else err[-1].startswith("usage:") is False) and line in err[-1], err


def test_what_the_checks_accept_builds():
    """The oracle the fuzz relies on: the shipped files build as the stages build them."""
    from tasks.ops.params import load_params

    for name in ("params.yaml", "params-paper.yaml", "params-regenerate.yaml"):
        build(load_params(ROOT / name))


def test_a_judge_mode_left_out_names_the_mode_its_prompt_needs(project, capsys):
    """params-regenerate.yaml without bon.judge.mode: the judge falls back to per_aspect, whose fields its prompt
    (judge_all.txt) does not use; the line named the prompt only, never the key that was left out."""
    text = yaml.safe_load((ROOT / "params-regenerate.yaml").read_text())
    del text["bon"]["judge"]["mode"]
    (project / "params.yaml").write_text(yaml.safe_dump(text, sort_keys=False))
    assert main(["params"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bon.judge.prompt: 'prompts/judge_all.txt' asks for $aspect_list" in err[0] \
        and "under bon.judge.mode per_aspect" in err[0], err
