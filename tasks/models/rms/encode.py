"""What a classifier RM sees (tasks/models/rms/seq_cls.py): `encode_answer` / `encode_many` build it;
train_rm uses the same functions, so training and scoring inputs are identical. Over max_length, tokens
are dropped in this order: the context's lowest-ranked whole posts (a raw profile lists "[n] (...)" posts
best first, so the best ones stay), then the end of the last post left (or of a context without posts),
then the question from its left end, and only when the answer alone does not fit, the answer's end. Any
cut marks the input truncated. Answers to the same question under the same context (chosen and rejected
of a pair, a question's BoN candidates) are all cut to the shortest context any of them needs, so they
are scored against the same profile."""
from __future__ import annotations

import re
from dataclasses import dataclass

from tasks.core.errors import ConfigError
from tasks.models.rms.base import input_hash, user_message


@dataclass(frozen=True)
class Encoded:
    ids: list[int]
    token_types: list[int] | None   # segment ids when the tokenizer makes them (BERT text pairs)
    truncated: bool
    user: str                       # the (possibly cut) user turn and answer the ids came from
    answer: str

    def hash(self) -> str:
        return input_hash(" ".join(map(str, self.ids)), " ".join(map(str, self.token_types or [])))


def _tokenize(tok, users: list[str], answers: list[str], template: str | None) -> list[tuple]:
    if template:   # chat models: the template over a user turn and the answer as assistant turn
        texts = [tok.apply_chat_template([{"role": "user", "content": u}, {"role": "assistant", "content": a}],
                                         chat_template=template, tokenize=False) for u, a in zip(users, answers)]
        enc = tok(texts, add_special_tokens=False)   # the template already has BOS/EOS
    else:          # BERT-style: a text pair, [CLS] user [SEP] answer [SEP]
        enc = tok(users, answers)
    types = enc.get("token_type_ids") or [None] * len(users)
    return list(zip(enc["input_ids"], types))


def _cut(tok, text: str, n: int, side: str) -> str:
    """`text` less about n tokens from one side, cut at a token boundary."""
    offsets = tok(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    if n >= len(offsets):
        return ""
    return text[offsets[n][0]:] if side == "left" else text[:offsets[len(offsets) - n - 1][1]]


POST = re.compile(r"^\[\d+\] ", re.M)   # a post line of tasks/stages/profiles.format_profile


def _shorter_context(tok, context: str, over: int) -> str:
    """A prefix of `context` at least ~`over` tokens shorter: whole posts off the end while more
    than one is left (the lowest-ranked first), else the end of the text."""
    starts = [m.start() for m in POST.finditer(context)]
    if len(starts) > 1:
        posts = [context[a:b] for a, b in zip(starts, starts[1:] + [len(context)])]
        sizes = [len(ids) for ids in tok(posts, add_special_tokens=False)["input_ids"]]
        keep, dropped = len(posts), 0
        while keep > 1 and dropped < over:
            keep -= 1
            dropped += sizes[keep]
        return context[:starts[keep]].rstrip("\n") if keep < len(posts) else context
    return _cut(tok, context, over, "right")


def _fit(tok, question: str, context: str, answer: str, max_length: int, template: str | None) -> tuple:
    """(Encoded, the context it kept): cut in the order of the module docstring until it fits."""
    cut = False
    while True:   # each pass drops >= 1 token, so it ends; re-tokenizing keeps ids exact
        user = user_message(question, context)
        ids, types = _tokenize(tok, [user], [answer], template)[0]
        over = len(ids) - max_length
        if over <= 0:
            return Encoded(ids, types, cut, user, answer), context
        if not answer:
            raise ConfigError(f"max_length {max_length} is shorter than the input's fixed tokens")
        cut = True
        if context:
            shorter = _shorter_context(tok, context, over)
            context = shorter if len(shorter) < len(context) else ""
        elif question:
            question = _cut(tok, question, over, "left")
        else:
            answer = _cut(tok, answer, over, "right")


def encode_answer(tok, question: str, context: str, answer: str, max_length: int,
                  template: str | None = None) -> Encoded:
    return _fit(tok, question, context, answer, max_length, template)[0]


def encode_release(tok, items: list[tuple[str, str, str]], max_length: int, template: str | None = None) -> list[Encoded]:
    """The release's input (evaluation/pointwise.py:59-77, BoN/score.py:77-91, PPO/reward_server.py:173-180):
    question and context glued, the chat template rendered as text, then `tokenizer(text, truncation=True,
    max_length=...)` with its default add_special_tokens=True: a tokenizer that adds BOS (Llama-3) puts a
    second one before the template's (bug kept), and an input over max_length loses its end (the answer and
    the template's closing tokens). A tokenizer with no chat template cannot run there (apply_chat_template
    raises): it keeps prbench's encoding."""
    if not template:
        return encode_many(tok, items, max_length, template)
    users = [user_message(q, c, "release") for q, c, _ in items]
    texts = [tok.apply_chat_template([{"role": "user", "content": u}, {"role": "assistant", "content": a}],
                                     chat_template=template, tokenize=False) for u, (_, _, a) in zip(users, items)]
    tok.deprecation_warnings["sequence-length-is-longer-than-the-specified-maximum"] = True
    full = tok(texts)["input_ids"] if texts else []
    enc = tok(texts, truncation=True, max_length=max_length) if texts else {"input_ids": []}
    types = enc.get("token_type_ids") or [None] * len(texts)
    return [Encoded(list(ids), t, len(f) > max_length, u, it[2])
            for ids, t, f, u, it in zip(enc["input_ids"], types, full, users, items)]


def encode_many(tok, items: list[tuple[str, str, str]], max_length: int, template: str | None = None) -> list[Encoded]:
    """encode_answer for many (question, context, answer); one batched tokenizer call for those
    that fit. Items sharing (question, context) share the shortest context any of them needs."""
    users = [user_message(q, c) for q, c, _ in items]
    tok.deprecation_warnings["sequence-length-is-longer-than-the-specified-maximum"] = True   # we fit them below
    first = _tokenize(tok, users, [a for _, _, a in items], template) if items else []
    groups: dict[tuple[str, str], list[int]] = {}
    for i, (q, c, _) in enumerate(items):
        groups.setdefault((q, c or ""), []).append(i)
    out: list[Encoded | None] = [Encoded(ids, types, False, u, it[2]) if len(ids) <= max_length else None
                                 for (ids, types), u, it in zip(first, users, items)]
    for (question, context), members in groups.items():
        if all(out[i] is not None for i in members):
            continue
        fitted = {i: _fit(tok, question, context, items[i][2], max_length, template) for i in members if out[i] is None}
        shared = min((kept for _, kept in fitted.values()), key=len)   # every kept context is a prefix
        for i in members:
            if i in fitted and fitted[i][1] == shared:
                out[i] = fitted[i][0]
            elif shared != context:   # fits with more context on its own: cut to the shared one
                enc = _fit(tok, question, shared, items[i][2], max_length, template)[0]
                out[i] = Encoded(enc.ids, enc.token_types, True, enc.user, enc.answer)
    return out

