"""`--model` / an RM entry's `model` that is not a model (issue 47): one line naming the folder and what it
lacks (and what is expected), exit 1, no traceback, before any scoring (nothing written). Each folder is built
here and then broken the way a download or a copy breaks it."""
import shutil

import pytest

from flows import cli
from tasks.models.rms import model_folder
from tests.conftest import ROOT

EXPECTS = "; " + model_folder.EXPECTS


def _minilm(folder):
    """A complete seq-cls model folder: the embedded MiniLM's files (config, weights, tokenizer)."""
    from tasks.models.encoders import EMBEDDED

    shutil.copytree(EMBEDDED["all-MiniLM-L6-v2"](), folder)
    return folder


def _broken(root, case):
    folder = _minilm(root / "rm")
    if case == "empty":
        shutil.rmtree(folder)
        folder.mkdir()
    elif case == "no weights":
        (folder / "model.safetensors").unlink()
    elif case == "no tokenizer":
        for name in ("tokenizer.json", "vocab.txt"):
            (folder / name).unlink()
    elif case == "sentencepiece":
        for name in ("tokenizer.json", "vocab.txt"):
            (folder / name).unlink()
        (folder / "tokenizer.model").write_bytes(b"\x0a\x00")   # a SentencePiece model, as T5 / Llama ship them
    elif case == "cut short":
        (folder / "model.safetensors").write_bytes(b"")        # every file there, the weights stopped early
    return folder


CASES = {   # how the folder is broken -> what the line says after `--model: '<folder>' ...`
    "empty": "is not a model folder: no config.json",
    "no weights": "is not a model folder: no weights (no *.safetensors or *.bin file)",
    "no tokenizer": "is not a model folder: no tokenizer (tokenizer.json, tokenizer.model, vocab.txt, or vocab.json "
                    "with merges.txt)",
    "sentencepiece": "is not a model folder: its tokenizer is a SentencePiece model (tokenizer.model) and the optional "
                     "package sentencepiece is not installed (pip install sentencepiece)",
}


def _score(capsys, tmp_path, *argv):
    out = tmp_path / "out"
    rc = cli.main(["score", *argv, "--out", str(out)])
    got = capsys.readouterr()
    return rc, got.err.strip(), out


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_folder_that_is_not_a_model_is_one_line(tmp_path, capsys, monkeypatch, case):
    monkeypatch.setattr(model_folder, "installed", lambda package: False)   # whether or not this venv has it
    folder = _broken(tmp_path, case)
    monkeypatch.chdir(ROOT)
    rc, err, out = _score(capsys, tmp_path, "--model", str(folder))
    assert rc == 1 and err == f"--model: '{folder}' {CASES[case]}{EXPECTS}", err
    assert not out.exists(), "nothing scored, nothing written"


def test_no_such_folder_and_a_file_are_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "config.json").write_text("{}")
    rc, err, _ = _score(capsys, tmp_path, "--model", "./my-rm")
    assert rc == 1 and err == f"--model: no such folder './my-rm'{EXPECTS}", err
    rc, err, _ = _score(capsys, tmp_path, "--model", "config.json")
    assert rc == 1 and err == f"--model: 'config.json' is a file, not a model folder{EXPECTS}", err


def test_a_model_that_fails_to_load_is_one_line_naming_the_flag(tmp_path, capsys, monkeypatch):
    """Every file there, so only loading it can tell: the loader's reason, still one line, before any scoring."""
    folder = _broken(tmp_path, "cut short")
    monkeypatch.chdir(ROOT)
    rc, err, out = _score(capsys, tmp_path, "--model", str(folder))
    assert rc == 1 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith(f"--model: cannot load '{folder}': SafetensorError: ") and err.endswith(EXPECTS), err
    assert not out.exists()


def test_an_rm_entry_whose_model_is_not_a_model_is_refused_by_the_params_check(tmp_path, capsys, monkeypatch):
    from tests.test_params_mistakes import _edit, _project

    folder = _broken(tmp_path, "no weights")
    text = _edit("    length-shorter: {kind: length-shorter}\n",
                 f"    length-shorter: {{kind: length-shorter}}\n    mine: {{kind: seq-cls, model: {folder}}}\n")
    (tmp_path / "project").mkdir()
    monkeypatch.chdir(_project(tmp_path / "project", text))
    assert cli.main(["params"]) == 1
    err = capsys.readouterr().err.strip()
    assert err == (f"params.yaml: scoring.rms.mine.model: '{folder}' is not a model folder: no weights (no "
                   f"*.safetensors or *.bin file){EXPECTS}"), err
