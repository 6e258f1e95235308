"""Where a page's numbers came from (tasks/ops/report/provenance.py, sources.py), by hand and fast: the code
version is a content hash over relative names (not the path, the time or caches); params differ from a shipped
setting key by key, an absent key shown as absent; each RM's model, revision and identity (an LLM judge's its
LLM's); the dataset's hash; the hub commits read; the pinned numerics and, on `prbench report`'s page only,
each machine; the inputs the page reads, missing ones left out."""
from __future__ import annotations

import hashlib
import json
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tasks.core import layout
from tasks.core.artifacts import file_hash
from tasks.ops.report import provenance as PV
from tasks.ops.report import sources as S


# --- the code version ---------------------------------------------------------------------------------------

def tree(root):
    (root / "tasks/sub").mkdir(parents=True)
    (root / "tasks/a.py").write_text("a = 1\n")
    (root / "tasks/sub/b.j2").write_text("{{ x }}\n")
    (root / "pyproject.toml").write_text("[project]\n")
    return ["tasks", "pyproject.toml", "missing"]


def test_the_code_version_hashes_relative_names_and_contents_in_order(tmp_path):
    paths = tree(tmp_path / "one")
    v = PV.code_version(tmp_path / "one", paths)
    by_hand = hashlib.sha256()
    for rel in ("pyproject.toml", "tasks/a.py", "tasks/sub/b.j2"):   # sorted by relative name
        by_hand.update(rel.encode() + b"\0" + file_hash(tmp_path / "one" / rel).encode() + b"\0")
    assert v == by_hand.hexdigest()
    shutil.copytree(tmp_path / "one", tmp_path / "elsewhere")
    assert PV.code_version(str(tmp_path / "elsewhere"), paths) == v, "another checkout path: the same version"
    (tmp_path / "one/tasks/__pycache__").mkdir()
    (tmp_path / "one/tasks/__pycache__/a.cpython-312.pyc").write_bytes(b"\0")
    (tmp_path / "one/tasks/sub/c.pyc").write_bytes(b"\0")
    assert PV.code_version(tmp_path / "one", paths) == v, "caches are not code"
    (tmp_path / "one/tasks/sub/b.j2").write_text("{{ y }}\n")
    assert PV.code_version(tmp_path / "one", paths) != v, "a template is code"
    (tmp_path / "one/tasks/sub/b.j2").write_text("{{ x }}\n")
    (tmp_path / "one/tasks/sub/b.j2").rename(tmp_path / "one/tasks/sub/c.j2")
    assert PV.code_version(tmp_path / "one", paths) != v, "a renamed file is a change"
    assert PV.code_version(tmp_path / "one", []) == hashlib.sha256().hexdigest()


# --- params against the shipped settings ---------------------------------------------------------------------

def test_params_are_flattened_to_dotted_keys_lists_and_empty_dicts_as_leaves():
    assert PV.flatten({"a": {"b": {"c": 1}, "d": [1, {"x": 2}], "e": {}}, "f": None}) == \
        {"a.b.c": 1, "a.d": [1, {"x": 2}], "a.e": {}, "f": None}


def test_a_difference_is_a_key_where_the_run_differs_from_any_reference():
    run = {"scoring": {"batch": 8, "rms": {"a": {"kind": "x"}}}, "seed": 1}
    refs = {"paper": {"scoring": {"batch": 16, "rms": {"a": {"kind": "x"}}}, "seed": 1, "extra": True},
            "default": {"scoring": {"batch": 8, "rms": {"a": {"kind": "x"}}}, "seed": 1}}
    rows = PV.params_differences(run, refs)
    assert [(r["key"], r["run"], r["references"]) for r in rows] == [
        ("extra", PV.MISSING, {"paper": True, "default": PV.MISSING}),
        ("scoring.batch", 8, {"paper": 16, "default": 8})]
    assert PV.params_differences(run, {"same": run}) == [] and PV.params_differences(run, {}) == []
    assert repr(PV.MISSING) == "(absent)"


def test_references_load_from_yaml_an_empty_file_as_no_keys(tmp_path):
    (tmp_path / "p.yaml").write_text("a:\n  b: 1\n")
    (tmp_path / "e.yaml").write_text("")
    assert PV.load_references({"paper": str(tmp_path / "p.yaml"), "empty": str(tmp_path / "e.yaml")}) == \
        {"paper": {"a": {"b": 1}}, "empty": {}}


# --- each RM ---------------------------------------------------------------------------------------------------

def test_each_rm_row_names_its_model_revision_identity_and_numerics():
    rms = {"judge": {"kind": "llm-judge", "llm": "qwen"}, "enc": {"kind": "embedding", "encoder": "minilm"},
           "bt": {"kind": "bradley-terry", "model": "base", "revision": "r1"}, "seq": {"kind": "seq-cls", "model": "m",
                                                                                    "revision": "r2"},
           "pinned": {"kind": "llm-judge", "llm": "qwen", "revision": "mine"}, "bare": None}
    llms = {"qwen": {"backend": "llama-cpp", "model": "qwen.gguf", "revision": "q1"}}
    numerics = {"dtype": "float32", "device": "cpu", "attn_implementation": "sdpa", "batch_invariant": True}
    metrics = {"seq": {"identity": "seq-cls:m@r2", "numerics": numerics}, "judge": {"identity": "llm:qwen"}}
    rows = {r["rm"]: r for r in PV.rm_rows(rms, llms, metrics, {"backbone": "minilm", "model_hash": "h1"})}
    assert list(rows) == ["bare", "bt", "enc", "judge", "pinned", "seq"]
    assert rows["judge"] == {"rm": "judge", "kind": "llm-judge", "model": "qwen: llama-cpp qwen.gguf", "revision": "q1",
                             "identity": "llm:qwen", "scored_with": None, "weights": None}
    assert rows["pinned"]["revision"] == "mine", "the RM's own pin before its LLM's"
    assert (rows["enc"]["model"], rows["bare"]["model"], rows["bare"]["kind"]) == ("minilm", None, None)
    assert (rows["bt"]["model"], rows["bt"]["weights"], rows["bt"]["revision"]) == ("trained here on minilm", "h1", "r1")
    assert rows["seq"]["scored_with"] == "float32 · cpu · sdpa attention · batch-invariant"
    assert rows["seq"]["weights"] is None
    untrained = {r["rm"]: r for r in PV.rm_rows(rms, llms, {}, None)}
    assert (untrained["bt"]["model"], untrained["bt"]["weights"]) == ("base", None)
    assert PV.rm_rows({"j": {"llm": "gone"}}, {}, {}, None)[0]["model"] == "gone: None None"


def test_scored_with_says_the_batching_mode():
    n = {"dtype": "bfloat16", "device": "cuda", "attn_implementation": "eager"}
    assert PV.scored_with({**n, "batch_invariant": False}) == "bfloat16 · cuda · eager attention · length-sorted batches"
    assert PV.scored_with(n).endswith("length-sorted batches")
    assert PV.scored_with(None) is None and PV.scored_with({}) is None


# --- data and hub commits ----------------------------------------------------------------------------------------

def test_the_dataset_hash_is_per_table_and_one_over_names_and_hashes(tmp_path):
    for name, text in (("questions", "q"), ("pairs", "p")):
        (tmp_path / name).write_text(text)
    got = PV.dataset_hash({"questions": str(tmp_path / "questions"), "pairs": str(tmp_path / "pairs")})
    each = {"pairs": file_hash(tmp_path / "pairs"), "questions": file_hash(tmp_path / "questions")}
    assert got == {"files": each, "combined": hashlib.sha256(
        f"pairs\0{each['pairs']}\0questions\0{each['questions']}\0".encode()).hexdigest()}
    assert list(got["files"]) == ["pairs", "questions"]


def test_revisions_list_the_commits_ingest_and_each_benchmark_read():
    ingest = {"revision": {"org/lamp-qa": "abc"}}
    benches = {"rb2": {"revision": "r2", "hub_id": "allenai/rb2"}, "local": {"revision": None},
               "prism": {"revision": "p1", "source": "hub:prism"}, "bare": {"revision": "b1"}, "none": None}
    assert PV.revisions(ingest, benches) == [
        {"repo": "org/lamp-qa", "revision": "abc", "read_by": "ingest"},
        {"repo": "bare", "revision": "b1", "read_by": "bench_score@bare"},
        {"repo": "hub:prism", "revision": "p1", "read_by": "bench_score@prism"},
        {"repo": "allenai/rb2", "revision": "r2", "read_by": "bench_score@rb2"}]
    assert PV.revisions(None, {}) == [] and PV.revisions({"revision": None}, {}) == []


def test_package_versions_start_with_python_and_say_none_for_a_missing_package(monkeypatch):
    import platform

    rows = PV.package_versions()
    assert rows[0] == {"package": "python", "version": platform.python_version()} and [r["package"] for r in rows[1:]] == PV.PACKAGES
    assert next(r for r in rows if r["package"] == "torch")["version"]
    monkeypatch.setattr(PV, "PACKAGES", ["no-such-package-here"])
    assert PV.package_versions()[1] == {"package": "no-such-package-here", "version": None}


# --- numerics ------------------------------------------------------------------------------------------------------

def record(label, cap="AVX2", dispatch=("X86_V3",), blas=(("Haswell", "numpy", "0.3.31"),)):
    return {"label": label, "torch_capability": cap, "numpy_dispatch": list(dispatch) if dispatch is not None else None,
            "openblas": [{"core": c, "library": lib, "version": v} for c, lib, v in blas]}


def test_kernels_are_one_line_per_stage():
    assert PV.kernels_of(record("x", blas=(("Haswell", "numpy", "1"), ("Zen", "scipy", "2")))) == \
        "numpy X86_V3 · OpenBLAS Haswell (numpy 1), Zen (scipy 2)"
    assert PV.kernels_of({"numpy_dispatch": [], "openblas": []}) == "numpy baseline · OpenBLAS not loaded"


def test_the_numerics_section_states_the_pins_and_only_a_reports_own_machines():
    from tasks.core import numerics as pins
    from tasks.core.determinism import DECISION_DECIMALS

    plain = PV.numerics(None)
    assert plain["machines"] is None and plain["mixed"] is False and plain["mixed_kernels"] is False
    assert plain["decimals"] == DECISION_DECIMALS and plain["floor"] == " + ".join(f.upper() for f in pins.FLOOR)
    assert [p["var"] for p in plain["pins"]] == [*pins.ISA_PINS, "MKL_CBWR", "MKL_DYNAMIC", " / ".join(pins.THREAD_VARS)]
    assert plain["pins"][-1]["value"] == "common.torch_threads"
    values = {p["var"]: p["value"] for p in plain["pins"]}
    assert values["MKL_CBWR"] == "COMPATIBLE (one MKL code path on Intel and AMD alike)"
    assert values["MKL_DYNAMIC"] == "FALSE"
    assert values["OPENBLAS_CORETYPE"] == "Haswell (numpy's and scipy's OpenBLAS; where the CPU has AVX2 + FMA)"
    machines = [record("train_rm"), record("score@a", cap="AVX512", dispatch=("X86_V3", "X86_V4")),
                record("score@b", dispatch=None), {k: v for k, v in record("x").items() if k != "label"}]
    got = PV.numerics(machines)
    assert [m.get("label") for m in got["machines"]] == [None, "score@a", "score@b", "train_rm"]
    assert got["machines"][2]["kernels"] is None, "no dispatch recorded: no kernels claimed"
    assert got["mixed"] == ["AVX2", "AVX512"]
    assert got["mixed_kernels"] == ["numpy X86_V3 X86_V4 · OpenBLAS Haswell (numpy 0.3.31)",
                                    "numpy X86_V3 · OpenBLAS Haswell (numpy 0.3.31)"]
    same = PV.numerics([record("a"), record("b")])
    assert same["mixed"] is False and same["mixed_kernels"] is False


def test_machine_records_are_read_in_name_order(tmp_path, monkeypatch):
    for name in ("b", "a"):
        (tmp_path / f"{name}.json").write_text(json.dumps({"label": name}))
    (tmp_path / "note.txt").write_text("x")
    assert PV.machine_records(tmp_path) == [{"label": "a"}, {"label": "b"}]
    assert PV.machine_records(tmp_path / "none") == []
    (tmp_path / "runs/numerics").mkdir(parents=True)
    (tmp_path / "runs/numerics/s.json").write_text('{"label": "s"}')
    monkeypatch.chdir(tmp_path)   # the default folder: runs/numerics of the project
    assert PV.machine_records() == [{"label": "s"}]


# --- what the page reads ----------------------------------------------------------------------------------------------

PARAMS = {"scoring": {"rms": {"b": {}, "a": {}}}, "benchmarks": {"rb2": {}},
          "report": {"reference_params": {"paper": "params-paper.yaml", "a-default": "params.yaml"}}}


def test_the_page_reads_every_stage_output_by_name_and_the_references_it_is_set_against():
    paths = S.input_paths(PARAMS)
    assert {k: paths[k] for k in ("leaderboard", "leaderboard_metrics", "correlation", "correlation_points",
                                  "correlation_metrics", "human_eval_metrics", "pairs_metrics", "generic_pairs_metrics",
                                  "ingest_metrics", "train_rm_metrics", "questions", "pairs", "profiles")} == {
        "leaderboard": layout.LEADERBOARD["leaderboard"], "leaderboard_metrics": layout.LEADERBOARD["metrics"],
        "correlation": layout.CORRELATION["correlation"], "correlation_points": layout.CORRELATION["points"],
        "correlation_metrics": layout.CORRELATION["metrics"], "human_eval_metrics": layout.HUMAN_EVAL["metrics"],
        "pairs_metrics": layout.PAIRS["metrics"], "generic_pairs_metrics": layout.GENERIC_PAIRS["metrics"],
        "ingest_metrics": layout.INGEST["metrics"], "train_rm_metrics": layout.TRAIN_RM["metrics"],
        "questions": layout.INGEST["questions"], "pairs": layout.INGEST["pairs"], "profiles": layout.INGEST["profiles"]}
    assert paths["correlation_metrics"] == layout.CORRELATION["metrics"]
    assert paths["score_metrics:a"] == layout.scores("a")["metrics"] and "score_metrics:b" in paths
    assert paths["bench_metrics:rb2"] == layout.bench_scores("rb2")["metrics"]
    assert paths["reference:paper"] == "params-paper.yaml" and paths["questions"] == layout.INGEST["questions"]
    assert {"bon_per_question", "rl_per_question"} <= set(paths)
    assert list(S.reference_files(PARAMS)) == ["a-default", "paper"] and S.reference_files({}) == {}
    assert not any(k.startswith("bench_metrics:") for k in S.input_paths({"scoring": {"rms": {}}}))


def test_only_the_inputs_that_exist_are_read(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "metrics").mkdir()
    (tmp_path / layout.LEADERBOARD["metrics"]).write_text("{}")
    (tmp_path / "params.yaml").write_text("")
    assert S.run_inputs(PARAMS) == {"leaderboard_metrics": layout.LEADERBOARD["metrics"],
                                    "reference:a-default": "params.yaml"}


def test_sources_read_json_and_parquet_by_name_a_missing_one_as_none(tmp_path):
    (tmp_path / "m.json").write_text('{"a": 1}')
    pq.write_table(pa.table({"x": [1, 2], "y": ["a", "b"]}), tmp_path / "t.parquet")
    src = S.Sources({"m": str(tmp_path / "m.json"), "t": str(tmp_path / "t.parquet"), "score_metrics:a": "a.json",
                     "score_metrics:b:c": "bc.json", "score": "s.json"})
    assert src.json("m") == {"a": 1} and src.json("gone") is None
    assert src.rows("t") == [{"x": 1, "y": "a"}, {"x": 2, "y": "b"}] and src.rows("gone") is None
    assert src.columns("t") == ["x", "y"] and src.columns("gone") == []
    assert src.has("m") and not src.has("gone")
    assert src.prefixed("score_metrics") == {"a": "a.json", "b:c": "bc.json"}
    with pytest.raises(FileNotFoundError):
        S.Sources({"m": str(tmp_path / "none.json")}).json("m")
