"""Truncation of a raw-profile context (issue 11 item 5): over max_length the lowest-ranked whole
posts go first (the profiles stage lists them best first), and chosen and rejected of one pair are
cut to the same context, so both are scored against the same profile."""
import pytest

from tasks.stages.profiles import format_profile
from tasks.models.rms.base import user_message
from tasks.models.rms.encode import encode_answer, encode_many


@pytest.fixture(scope="module")
def tok():
    from transformers import AutoTokenizer

    from tasks.models.encoders import EMBEDDED

    return AutoTokenizer.from_pretrained(EMBEDDED["all-MiniLM-L6-v2"]())


POSTS = [{"category": "cooking", "text": f"post{k} " + " ".join(f"w{k}x{j}" for j in range(12))} for k in range(1, 7)]
CONTEXT = "My past posts:\n" + format_profile(POSTS, 60)   # what the raw_profile strategy shows
Q = "What should I cook this week?"
SHORT, LONG = "Lentil soup.", " ".join(["Lentil soup with cumin, lemon and plenty of bread."] * 4)


def _length(tok, context, answer):
    return len(tok(user_message(Q, context), answer)["input_ids"])


def _posts_kept(user: str) -> list[int]:
    return [k for k in range(1, 7) if f"[{k}] (cooking) post{k} " in user]


def test_the_lowest_ranked_whole_posts_are_dropped_first(tok):
    three = "My past posts:\n" + format_profile(POSTS[:3], 60)
    enc = encode_answer(tok, Q, CONTEXT, SHORT, _length(tok, three, SHORT) + 2)
    assert enc.truncated and enc.user == user_message(Q, three), "posts 1-3 whole, 4-6 gone"
    assert enc.answer == SHORT and len(enc.ids) <= _length(tok, three, SHORT) + 2


def test_a_single_post_too_long_keeps_its_start(tok):
    enc = encode_answer(tok, Q, CONTEXT, SHORT, _length(tok, "", SHORT) + 30)
    assert enc.truncated and "My past posts:\n[1] (cooking) post1 w1x0 w1x1" in enc.user
    assert "w1x11" not in enc.user and "[2]" not in enc.user and enc.answer == SHORT


def test_chosen_and_rejected_of_a_pair_share_the_shortest_context(tok):
    limit = _length(tok, "My past posts:\n" + format_profile(POSTS[:4], 60), SHORT)   # SHORT fits 4 posts, LONG fewer
    chosen, rejected = encode_many(tok, [(Q, CONTEXT, SHORT), (Q, CONTEXT, LONG)], limit)
    alone = encode_answer(tok, Q, CONTEXT, SHORT, limit)
    assert _posts_kept(alone.user) == [1, 2, 3, 4], "on its own the short answer keeps four posts"
    kept = _posts_kept(rejected.user)
    assert kept == list(range(1, len(kept) + 1)) and 1 <= len(kept) < 4
    assert chosen.user == rejected.user, "both answers are scored against the same profile"
    assert chosen.truncated and rejected.truncated and chosen.answer == SHORT and rejected.answer == LONG
    assert max(len(chosen.ids), len(rejected.ids)) <= limit


def test_train_rm_order_chosen_rejected_alternating_keeps_pairs_apart(tok):
    other_q = "Which knife should I buy?"
    limit = _length(tok, "My past posts:\n" + format_profile(POSTS[:4], 60), SHORT)
    items = [(Q, CONTEXT, SHORT), (Q, CONTEXT, LONG), (other_q, "My past posts:\n[1] (cooking) I like knives", SHORT),
             (other_q, "My past posts:\n[1] (cooking) I like knives", LONG)]
    enc = encode_many(tok, items, limit)
    assert enc[0].user == enc[1].user and enc[2].user == enc[3].user
    assert not enc[2].truncated and not enc[3].truncated, "a pair that fits is left alone"
