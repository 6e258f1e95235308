"""Download everything first: a release's every file (weights included) is fetched from the Hub
(here the protocol-faithful fake one, through the real huggingface_hub client) and the RM built from
them before params are touched. A 404 or a bad file fails at once, without retries, in one line
naming the model, revision, file and reason; the fake Hub counts the requests."""
import subprocess
import sys
import time

import pytest

from tests.conftest import ROOT
from tests.fakes.hf_hub import FakeHub, tiny_seq_cls
from tests.serve_project import env

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

CODE = """
import sys
from tasks.ops import releases
from tasks.core.errors import ConfigError
r = releases.Release(model=sys.argv[1], revision=sys.argv[2], source="hub")
try:
    releases.prefetch(r, {"kind": "seq-cls", "max_length": 64, "batch_size": 2, "model": r.model, "revision": r.revision})
except ConfigError as exc:
    print(exc)
    sys.exit(3)
print("ok")
"""


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("prefetch")
    rm = tiny_seq_cls(tmp / "tiny-rm")
    hub = FakeHub().start()
    shas = {"good": hub.release("acme/good-rm", rm),
            "no-weights": hub.release("acme/no-weights-rm", rm, missing=("model.safetensors",)),
            "garbage": hub.release("acme/garbage-rm", rm, replace={"model.safetensors": b"not a safetensors file"})}
    yield hub, shas, tmp, sorted(p.name for p in rm.iterdir())
    hub.stop()


def _prefetch(hub, tmp, model, sha):
    e = env(HF_ENDPOINT=hub.url, HF_HOME=str(tmp / "hf"), PYTHONPATH=str(ROOT))
    for key in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        e.pop(key, None)
    start = time.monotonic()
    out = subprocess.run([sys.executable, "-c", CODE, model, sha], cwd=ROOT, env=e, capture_output=True, text=True,
                         timeout=180)
    return out, time.monotonic() - start


def _requests(hub, model):
    return [(m, p) for m, p in list(hub.requests) if model in p]


def test_every_file_is_downloaded_and_the_rm_built(hub):
    fake, shas, tmp, files = hub
    out, took = _prefetch(fake, tmp, "acme/good-rm", shas["good"])
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stdout + out.stderr
    fetched = {p.rsplit("/", 1)[-1] for m, p in _requests(fake, "acme/good-rm") if "/resolve/" in p and m == "GET"}
    assert set(files) <= fetched, f"weights and tokenizer too, not the config only: {sorted(fetched)}"
    print(f"good release: prefetch + RM built in {took:.1f} s")


def test_missing_weights_fail_at_once_in_one_line_without_retries(hub):
    fake, shas, tmp, files = hub
    model, sha = "acme/no-weights-rm", shas["no-weights"]
    out, took = _prefetch(fake, tmp, model, sha)
    assert out.returncode == 3, out.stdout + out.stderr
    line = out.stdout.strip()
    assert "\n" not in line, line
    assert line.startswith(f"{model}@{sha}: download failed: model.safetensors: 404"), line
    reqs = _requests(fake, model)
    weights = [r for r in reqs if r[1].endswith("/model.safetensors")]
    print(f"missing weights: failed in {took:.1f} s after {len(reqs)} requests ({len(weights)} for the weights)")
    assert took < 30
    assert len(weights) <= 2, f"a 404 is not retried: {weights}"
    assert len(reqs) <= 2 * len(files) + 4, reqs


def test_a_weights_file_that_does_not_load_fails_naming_the_kind(hub):
    fake, shas, tmp, _ = hub
    model, sha = "acme/garbage-rm", shas["garbage"]
    out, took = _prefetch(fake, tmp, model, sha)
    assert out.returncode == 3, out.stdout + out.stderr
    line = out.stdout.strip()
    assert "\n" not in line and line.startswith(f"{model}@{sha}: does not load as a seq-cls RM: "), line
    assert took < 30
