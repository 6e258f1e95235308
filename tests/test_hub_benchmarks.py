"""Every benchmark loaded the way a user with a network loads it: the real `datasets` client, from a
local fake Hub (tests/fakes/hf_datasets.py) holding each dataset in its publisher's layout
(tests/hub_layouts.py). Each gives the items and published numbers its local copy gives, at the
revision it resolved; a pinned sha then loads from the HF cache offline."""
import json
import re
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.fakes.hf_datasets import FakeDatasetHub
from tests.hub_layouts import DOMAINS, LAYOUTS
from tests.stage_project import shipped_params


OFFLINE = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")


def run_probe(jobs, env, tmp_path, name="jobs"):
    spec, out = tmp_path / f"{name}.json", tmp_path / f"{name}.out.json"
    spec.write_text(json.dumps(jobs))
    proc = subprocess.run([sys.executable, "-m", "tests.hub_layouts", str(spec), str(out)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(out.read_text())


def hub_env(hub, tmp_path, **extra):
    env = {k: v for k, v in os.environ.items() if k not in OFFLINE + ("HF_TOKEN",)}
    return {**env, "HF_ENDPOINT": hub.url, "HF_HOME": str(tmp_path / "hf"), "PYTHONPATH": str(ROOT), **extra}


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_every_benchmark_from_its_publishers_layout_through_the_real_client(tmp_path):
    with FakeDatasetHub() as hub:
        shas = {name: hub.publish(repo, files()) for name, (repo, files, _) in LAYOUTS.items()}
        jobs = [{"benchmark": name} for name in LAYOUTS] + [{"benchmark": n, "path": str(LAYOUTS[n][2])} for n in LAYOUTS]
        ours = LAYOUTS["personalised"][0]
        jobs += [{"argv": ["score", "--kind", "length-longer", "--benchmark", "personalised", "--data", ours,
                           "--out", str(tmp_path / "score")]},
                 {"ingest": {**shipped_params()["ingest"], "source": "hub", "hub_id": ours, "layout": "rewardbench",
                             "splits": ["test"], "revision": shas["personalised"]}}]
        got = run_probe(jobs, hub_env(hub, tmp_path), tmp_path)
    cli_run, ingested = got[-2:]
    # `prbench score --benchmark personalised` on the hub copy: every config's pairs, the domains as subsets
    doc = cli_run["metrics"]   # the results JSON (schema_version 1)
    assert cli_run["rc"] == 0 and doc["n"] == 30
    assert doc["dataset"]["revision"] == shas["personalised"] and doc["dataset"]["revision_asked"] == "main"
    assert list(doc["results"]["strategies"]["none"]["subsets"]) == list(DOMAINS)
    # ingest.source: hub, pinned: the same pairs, the sha recorded in its metrics and in each file's label
    assert ingested["pairs"] == 30 and ingested["revision"] == {ours: shas["personalised"]}
    assert all(f.startswith(f"hf://{ours}@{shas['personalised']}/") for f in ingested["files"])
    from_hub, local = dict(zip(LAYOUTS, got[:len(LAYOUTS)])), dict(zip(LAYOUTS, got[len(LAYOUTS):2 * len(LAYOUTS)]))
    for name in LAYOUTS:
        assert "error" not in from_hub[name], from_hub[name]
        assert from_hub[name]["revision"] == shas[name]          # the sha it read, resolved from main
        assert local[name]["revision"] is None
        for key in ("items", "accuracy", "published", "profiles"):
            assert from_hub[name][key] == local[name][key], (name, key)
    ours = from_hub["personalised"]   # every config's test pairs (10 each in the sample), the domains as subsets
    assert ours["items"] == 30 and ours["subsets"] == list(DOMAINS)
    prb = from_hub["personal-rewardbench"]   # split == test rows only; train and val rows are the history
    assert prb["items"] == 3 and prb["profiles"] == 3
    assert from_hub["rm-bench"]["published"]["score"] == 0.7222
    assert from_hub["ppe-human"]["published"]["ties_dropped"] >= 1


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_each_hub_failure_is_one_line_and_a_pinned_sha_loads_offline(tmp_path):
    rb2_id, ppe_id, ours_id = (LAYOUTS[n][0] for n in ("rewardbench2", "ppe-human", "personalised"))
    with FakeDatasetHub(token="hf_good") as hub:
        sha = hub.publish(rb2_id, LAYOUTS["rewardbench2"][1]())
        hub.publish(rb2_id, {**LAYOUTS["rewardbench2"][1](), "extra.txt": "a newer commit"})   # main moves on
        hub.publish(ppe_id, LAYOUTS["ppe-human"][1](), gated=True)
        two = {k: v for k, v in LAYOUTS["personalised"][1]().items() if not k.startswith("Society")}
        two["README.md"] = two["README.md"].split("- config_name: Society")[0] + "---\n"
        hub.publish(ours_id, two)
        bad = hub_layouts_with_a_string_for_a_list()
        hub.publish("someone/rb2-copy", bad)
        jobs = [{"benchmark": "rewardbench2", "revision": sha},                          # pinned: read, cached
                {"benchmark": "ppe-human"},                                              # gated, token accepted
                {"benchmark": "ppe-human", "hub_id": "lmarena-ai/PPE-human-preference-v1"},   # ids are case-sensitive
                {"benchmark": "personalised"},                                           # a config missing
                {"benchmark": "rewardbench2", "hub_id": "someone/rb2-copy"},             # schema mismatch
                {"benchmark": "rewardbench2", "revision": "v9"}]                         # no such revision
        ok, gated, missing, config, schema, rev = run_probe(jobs, hub_env(hub, tmp_path, HF_TOKEN="hf_good"), tmp_path)
        no_token, = run_probe([{"benchmark": "ppe-human"}], hub_env(hub, tmp_path), tmp_path, "anon")
        wrong, = run_probe([{"benchmark": "ppe-human"}], hub_env(hub, tmp_path, HF_TOKEN="hf_bad"), tmp_path, "wrong")
        offline = hub_env(hub, tmp_path, HF_HUB_OFFLINE="1")
        run_probe([{"download": [rb2_id, sha, str(tmp_path / "rb2")]}], hub_env(hub, tmp_path), tmp_path, "download")
    assert ok["revision"] == sha and ok["items"] == 6 and "error" not in gated
    where = "benchmarks (ppe-human): cannot load hf://lmarena-ai/PPE-human-preference-v1@main/test: "
    assert missing["error"].startswith(where + "no such dataset repo on http://127.0.0.1:") and "case-sensitive" in missing["error"]
    for refused in (no_token, wrong):
        assert ("accept the terms at https://huggingface.co/datasets/lmarena-ai/PPE-Human-Preference-V1, set HF_TOKEN"
                in refused["error"])
    assert "(HF_TOKEN is not set)" in no_token["error"] and "(HF_TOKEN was refused)" in wrong["error"]
    assert re.match(r"benchmarks \(personalised\): cannot load hf://QiyaoMa/Personalized-RewardBench@[0-9a-f]{40}/"
                    r"Society_and_Culture/test: no config 'Society_and_Culture'", config["error"])
    assert re.fullmatch(r"hf://someone/rb2-copy@[0-9a-f]{40}/test: row 0 \(id=fact-1\): field 'chosen': "
                        r"expected a list of strings, got str", schema["error"])
    assert rev["error"].startswith("benchmarks (rewardbench2): cannot load hf://allenai/reward-bench-2@v9/test: "
                                   "no revision 'v9'")
    assert all("\n" not in r["error"] for r in (missing, no_token, wrong, config, schema, rev))
    # the hub is gone: the pinned sha loads from the HF cache; what was never fetched says how to fetch it
    cached, never = run_probe([{"benchmark": "rewardbench2", "revision": sha}, {"benchmark": "rm-bench"}], offline,
                              tmp_path, "offline")
    assert cached["revision"] == sha and cached["published"] == ok["published"]
    local_copy_in_the_pipeline(tmp_path, sha, "f" * 40)
    assert never["error"] == ("benchmarks (rm-bench): cannot load hf://THU-KEG/RM-Bench@main/train: offline "
                              "(HF_HUB_OFFLINE) and revision 'main' is not in the HF cache; where the network is, run "
                              "`hf download THU-KEG/RM-Bench --repo-type dataset --revision main` (same HF_HOME), "
                              "or unset HF_HUB_OFFLINE")


def hub_layouts_with_a_string_for_a_list() -> dict:
    from tests.fakes.hf_datasets import parquet

    files = LAYOUTS["rewardbench2"][1]()
    rows = [{"id": "fact-1", "prompt": "p", "chosen": "one answer", "rejected": ["a", "b"], "subset": "Factuality"}]
    return {**files, "data/test-00000-of-00001.parquet": parquet(rows)}


def local_copy_in_the_pipeline(tmp_path, sha, other):
    """A `benchmarks:` entry on a `hf download --local-dir` copy: its sha recorded; another pinned sha refused."""
    from tasks.core import layout
    from tasks.core.errors import ConfigError
    from tasks.stages.benchmarks import stage

    params = shipped_params()
    entry = {"source": "rewardbench2", "path": str(tmp_path / "rb2"), "revision": sha, "rms": ["length-longer"],
             "subset": None, "limit": None, "hub_id": None}
    out = {k: str(tmp_path / "bench" / v) for k, v in layout.bench_scores("rb2").items()}
    m = stage.run({**params, "benchmarks": {"rb2": entry}}, "rb2", out)
    assert (m["hub_id"], m["revision"], m["items"]) == ("allenai/reward-bench-2", sha, 6)
    with pytest.raises(ConfigError, match=rf"benchmarks.rb2.revision: pins {other} but the local copy at .* is revision "
                                          rf"{sha}: run `hf download allenai/reward-bench-2 --repo-type dataset "
                                          rf"--revision {other} --local-dir .*rb2`"):
        stage.run({**params, "benchmarks": {"rb2": {**entry, "revision": other}}}, "rb2", out)
