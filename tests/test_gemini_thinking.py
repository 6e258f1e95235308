"""Gemini 2.5 thinking and the output budget (issue 11 item 3), through the real google-genai
client against the fake server: the thinking budget comes from params (off by default), and a
reply that stopped on the token limit is never taken as a short pair answer."""
import pytest

from tasks.models.llm import LLM, CallCache, GenParams, make_backend
from tasks.stages.pairs import generate_pairs
from tests.conftest import ROOT
from tests.fakes.gemini_server import FakeGeminiServer, thinking_budget

KEY = "test-gemini-key"
ANSWER = " ".join(["Grow basil and mint in two small pots on the balcony rail."] * 3)   # 33 words


@pytest.fixture(autouse=True)
def _gemini_key(monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)


def _llm(server, tmp_path, **entry):
    backend = make_backend({"backend": "gemini", "model": "gemini-2.5-flash", "base_url": server.url, **entry})
    return LLM(backend, CallCache(tmp_path / "calls.sqlite"), max_retries=0)


def test_thinking_is_off_by_default_so_the_whole_budget_is_the_reply(tmp_path):
    with FakeGeminiServer(lambda m, s: ANSWER, api_key=KEY, thinking_tokens=130) as server:
        out = _llm(server, tmp_path).generate([{"role": "user", "content": "Q?"}], GenParams(max_tokens=140))
    assert thinking_budget(server.configs[0]) == 0
    assert out.text == ANSWER and out.finish_reason == "stop"


def test_thinking_budget_from_params_is_sent_and_part_of_the_identity(tmp_path):
    with FakeGeminiServer(lambda m, s: ANSWER, api_key=KEY) as server:
        llm = _llm(server, tmp_path, thinking_budget=64)
        llm.generate([{"role": "user", "content": "Q?"}], GenParams(max_tokens=140))
        dynamic = _llm(server, tmp_path, thinking_budget=None)
        dynamic.generate([{"role": "user", "content": "Q?"}], GenParams(max_tokens=140))
    assert thinking_budget(server.configs[0]) == 64
    assert "thinkingConfig" not in server.configs[1], "null leaves the model's dynamic default"
    assert llm.identity != dynamic.identity, "another budget never reuses cached replies"


def _pairs_params(**kw):
    return {"profile_k": 2, "max_words_per_post": 20, "temperature": 0.0, "top_p": 1.0, "max_tokens": 140,
            "max_words": 100, "parse_retries": 1, "temperature_bump": 0.3,
            "chosen_prompt": str(ROOT / "prompts/pair_chosen.txt"),
            "rejected_prompt": str(ROOT / "prompts/pair_rejected.txt"), **kw}


QUESTION = {"id": "q1", "domain": "Lifestyle", "split": "test", "question": "What herbs suit a tiny balcony?",
            "rubric_aspects": [{"aspect": "Low budget", "evidence": "cheap", "reason": ""}]}
RANKED = [{"question_id": "q1", "rank": 1, "category": "gardening", "text": "My balcony is one metre wide."}]


def test_a_reply_cut_at_the_token_limit_is_invalid_not_a_short_answer(tmp_path):
    # dynamic thinking eats 130 of 140 tokens: the visible reply is the first 10 words, MAX_TOKENS
    with FakeGeminiServer(lambda m, s: ANSWER, api_key=KEY, thinking_tokens=130) as server:
        (row,) = generate_pairs([QUESTION], RANKED, _llm(server, tmp_path, thinking_budget=None), _pairs_params(), 7)
    assert row["chosen"] is None and row["rejected"] is None and not row["format_ok"]
    assert "truncated" in row["error"] and row["attempts"] == 2, "retried, then invalid"
    assert row["chosen_raw"] == " ".join(ANSWER.split()[:10]), "the cut reply is kept for inspection"


def test_the_default_thinking_budget_gives_whole_pair_answers(tmp_path):
    with FakeGeminiServer(lambda m, s: ANSWER, api_key=KEY, thinking_tokens=130) as server:
        (row,) = generate_pairs([QUESTION], RANKED, _llm(server, tmp_path), _pairs_params(), 7)
    assert row["format_ok"] and row["chosen"] == ANSWER and row["attempts"] == 1
