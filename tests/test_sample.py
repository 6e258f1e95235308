"""The bundled sample keeps its promises (sizes, lengths, evidence), the released-benchmark copy
is in sync with the LaMP-QA-layout files, and the sample is learnable from profiles."""
import importlib.util
import json

import pyarrow.parquet as pq
import pytest

from tests.conftest import SAMPLE


def _load(name):
    spec = importlib.util.spec_from_file_location(name, SAMPLE / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


STEMS = sorted(p.stem for p in (SAMPLE / "lamp_qa").glob("*.json"))


def test_all_domains_and_splits_present():
    assert STEMS == sorted(f"{c}_{s}" for c in ("Art_and_Entertainment", "Lifestyle_and_Personal_Development",
                                                "Society_and_Culture") for s in ("test", "train"))


@pytest.mark.parametrize("stem", STEMS)
def test_sample_properties(stem):
    assert _load("check_sample").check(stem) == []


@pytest.mark.parametrize("stem", STEMS)
def test_released_layout_in_sync(stem):
    mod = _load("make_rewardbench")
    assert pq.read_table(mod.target(stem)).equals(mod.build(stem)), "run data/sample/make_rewardbench.py"


def test_profiles_carry_the_rubric_preferences():
    """Learnable: a user's own posts say more about their rubric than other users' posts do."""
    from tasks.models.encoders import Encoder

    enc = Encoder("embedded:all-MiniLM-L6-v2")
    wins = total = 0
    for stem in STEMS:
        rows = json.loads((SAMPLE / "lamp_qa" / f"{stem}.json").read_text())
        aspects = enc.encode([" ".join(a["aspect"] for a in r["rubric_aspects"]) for r in rows])
        posts = enc.encode([" ".join(p["text"] for p in r["profile"]) for r in rows])
        sims = aspects @ posts.T
        wins += int((sims.argmax(axis=1) == range(len(rows))).sum())
        total += len(rows)
    assert wins / total > 0.5, f"own profile best matches own rubric for only {wins}/{total} users"
