"""A saved model folder's bytes depend on the model, not on how it was loaded: transformers records
`local_files_only` in a tokenizer's config when HF_HUB_OFFLINE is set (read once, at import), so
`make run` (hub on) and `benchmarks/main_job.py` (hub off) wrote different train_rm folders for the
same weights. Each side runs in its own process, as a stage does."""
import json
import os
import subprocess
import sys

from tests.conftest import ROOT

SAVE = """
import hashlib, json, sys
from pathlib import Path
from transformers import AutoTokenizer
from tasks.core.determinism import scrub_saved
from tasks.models.encoders import resolve_model
out = Path(sys.argv[1])
AutoTokenizer.from_pretrained(resolve_model("embedded:all-MiniLM-L6-v2")[0]).save_pretrained(out)
scrub_saved(out)
print(json.dumps({f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in sorted(out.iterdir())}))
"""


def _saved(folder, offline: bool) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_OFFLINE")}   # conftest sets three
    env.update({"PYTHONPATH": str(ROOT), **({"HF_HUB_OFFLINE": "1"} if offline else {})})
    out = subprocess.run([sys.executable, "-c", SAVE, str(folder)], env=env, capture_output=True, text=True,
                         timeout=120, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_hub_switched_off_or_not_saves_the_same_bytes(tmp_path):
    on, off = _saved(tmp_path / "on", offline=False), _saved(tmp_path / "off", offline=True)
    assert "tokenizer_config.json" in on
    assert on == off
