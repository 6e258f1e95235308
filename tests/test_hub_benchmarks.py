"""Every benchmark loaded the way a user with a network loads it: the real `datasets` client, from a
local fake Hub (tests/fakes/hf_datasets.py) holding each dataset in its publisher's layout
(tests/hub_layouts.py). Each gives the items and published numbers its local copy gives, at the
revision it resolved; a pinned sha then loads from the HF cache offline."""
import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.fakes.hf_datasets import FakeDatasetHub
from tests.hub_layouts import DOMAINS, LAYOUTS


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
        got = run_probe(jobs, hub_env(hub, tmp_path), tmp_path)
    from_hub, local = dict(zip(LAYOUTS, got[:len(LAYOUTS)])), dict(zip(LAYOUTS, got[len(LAYOUTS):]))
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
