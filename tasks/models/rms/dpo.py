"""Implicit reward models (`dpo`): a DPO-trained policy scored by its own log-probabilities,

    reward(x, y) = sum over the answer's tokens t of [log pi(y_t | x, y_<t) - log pi_ref(y_t | x, y_<t)]

with `ref_model` its reference (absent: reference-free, log pi alone), `normalize: mean` dividing by the number
of answer tokens. The input is seq-cls's (tasks/models/rms/encode.py: the chat template over [user: question +
context, assistant: answer], the same cuts, `truncated` counts and batch-invariant shapes); only the answer's
tokens are summed, never the template's or the user turn's. Where this differs from reward-bench's DPO inference:
docs/benchmarks.md#dpo-models-implicit-rewards."""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Literal

from tasks.core.errors import ConfigError
from tasks.models.rms.base import input_hash
from tasks.models.rms.encode import Encoded, encode_many
from tasks.models.rms.registry import register
from tasks.models.rms.seq_cls import _HFRewardModel, score_in_windows

NORMALIZE = ("sum", "mean")
MARK = "\ue000answer\ue000"   # private-use characters: in no real answer, kept as they are by any template


@dataclass(frozen=True)
class Spanned(Encoded):
    start: int = 0   # ids[start:stop] are the answer's tokens (a token it shares with the template counts)
    stop: int = 0

    def hash(self) -> str:
        return input_hash(" ".join(map(str, self.ids)), f"answer {self.start}:{self.stop}")


def _common(a: list[int], b: list[int]) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def _turns(user: str, answer: str) -> list[dict]:
    return [{"role": "user", "content": user}, {"role": "assistant", "content": answer}]


def answer_spans(tok, template: str, encs: list[Encoded], where: str) -> list[Spanned]:
    """Where each encoded answer's tokens are: the template rendered with a marker for the answer gives the text
    before it (head); tokenizing head and head + answer finds the span in the ids, a token merged across either
    border counted as the answer's. A template that does not show the answer as written is an error."""
    heads, uptos = [], []
    for e in encs:
        marked = tok.apply_chat_template(_turns(e.user, MARK), chat_template=template, tokenize=False)
        text = tok.apply_chat_template(_turns(e.user, e.answer), chat_template=template, tokenize=False)
        head = marked[:marked.find(MARK)] if MARK in marked else None
        body = next((a for a in (e.answer, e.answer.strip()) if head is not None and text.startswith(head + a)), None)
        if body is None:
            raise ConfigError(f"{where}: the chat template does not show the assistant's answer as written (the "
                              "answer's log-probabilities need its tokens); give a chat_template that does")
        heads.append(head)
        uptos.append(head + body)
    ids = tok(heads + uptos, add_special_tokens=False)["input_ids"] if encs else []
    out = []
    for e, head, upto in zip(encs, ids[:len(encs)], ids[len(encs):]):
        start = _common(head, e.ids)
        stop = _common(upto, e.ids)
        stop = min(stop + (stop < len(upto)), len(e.ids))   # its last token merged with the template's next text
        if upto == head:                                     # an empty answer: no tokens
            stop = start
        out.append(Spanned(e.ids, e.token_types, e.truncated, e.user, e.answer, max(start, 1), max(stop, 1)))
    return out


@register
class DpoRM(_HFRewardModel):
    kind = "dpo"
    OPTIONS = {**_HFRewardModel.OPTIONS, "chat_template": str | None, "ref_model": str | None,
               "ref_revision": str | None, "normalize": Literal[NORMALIZE]}

    @classmethod
    def entry_problems(cls, entry, key):
        from tasks.models.rms.model_folder import problem

        why = {k: problem(entry.get(k)) for k in ("model", "ref_model")}
        return [f"{key}.{k}: {w}" for k, w in why.items() if w]

    def __init__(self, name, entry):
        from transformers import AutoModelForCausalLM, AutoTokenizer

        super().__init__(name, entry)
        self.ref_id, self.ref_revision = entry.get("ref_model"), entry.get("ref_revision")
        self.normalize = entry.get("normalize", "sum")
        self.tok = self._load(AutoTokenizer)
        self.template = entry.get("chat_template") or getattr(self.tok, "chat_template", None)
        if not self.template:
            raise ConfigError(f"scoring.rms.{name}.chat_template: model '{self.model_id}' has no chat template; "
                              "give one (a Jinja string) in this entry")
        self.models = [self._load(AutoModelForCausalLM, dtype=self.dtype).to(self.device).eval()]
        if self.ref_id:
            self._check_same_vocab(self._load(AutoTokenizer, "ref_model", (self.ref_id, self.ref_revision)))
            ref = self._load(AutoModelForCausalLM, "ref_model", (self.ref_id, self.ref_revision), dtype=self.dtype)
            self.models.append(ref.to(self.device).eval())
        self.model = self.models[0]
        configs = [m.config for m in self.models]
        if len({c.vocab_size for c in configs}) > 1:
            raise self._other_vocab(f"{configs[0].vocab_size} vs {configs[1].vocab_size} output logits")
        self.max_length = min(self._max_length(self.tok, c) for c in configs)
        pad = self.tok.pad_token_id if self.tok.pad_token_id is not None else self.tok.eos_token_id
        self.pad_id = pad or 0   # right padding after every answer: pad positions are masked and never read
        self.keeps_logits = all("logits_to_keep" in inspect.signature(m.forward).parameters for m in self.models)
        answer_spans(self.tok, self.template, encode_many(self.tok, [("q", "", "a b")], self.max_length, self.template),
                     f"scoring.rms.{name}.chat_template")   # a template that hides the answer fails here, not mid-run
        self.identity()

    def _other_vocab(self, what: str) -> ConfigError:
        return ConfigError(f"scoring.rms.{self.name}.ref_model: '{self.ref_id}' does not share the tokenizer of "
                           f"'{self.model_id}' ({what}); a DPO policy's reference is the model it was trained from")

    def _check_same_vocab(self, ref_tok) -> None:
        mine, theirs = self.tok.get_vocab(), ref_tok.get_vocab()
        if mine != theirs:
            raise self._other_vocab(f"{len(mine)} vs {len(theirs)} tokens, "
                                    f"{sum(mine.get(t) != i for t, i in theirs.items())} differ")

    def identity(self) -> str:
        if getattr(self, "_identity", None) is None:
            from tasks.models.rms.seq_cls import _weights_hash

            ref = (f"{self.ref_id}@{self.ref_revision or 'default'}:{_weights_hash(self.ref_id)}"
                   if self.ref_id else "none")
            self._identity = f"{super().identity()}|reference:{ref}|normalize:{self.normalize}"
        return self._identity

    def numerics(self) -> dict:
        return {**super().numerics(), "reward": "implicit (DPO)", "reference": self.ref_id or "none (reference-free)",
                "normalize": self.normalize}

    def score_answers(self, items):
        # prbench's input under either common.fidelity: the authors' release never scored a DPO model
        def encode(xs):
            encs = encode_many(self.tok, xs, self.max_length, self.template)
            return answer_spans(self.tok, self.template, encs, f"scoring.rms.{self.name}.chat_template")

        plan = (lambda lengths: self.PLAN(lengths, self.device)) if self.invariant else None
        return score_in_windows(items, encode, self._forward, self.batch_size, plan)

    def _forward(self, encs: list[Spanned], rows: int | None = None, width: int | None = None) -> list[float | None]:
        """Each answer's implicit reward; the batch padded on the right to `width` and to `rows` rows with fillers
        (copies of the first answer, dropped), as seq-cls's forward."""
        import torch

        n = len(encs)
        width = width or max(len(e.ids) for e in encs)
        encs = encs + encs[:1] * ((rows or n) - n)
        ids = torch.tensor([e.ids + [self.pad_id] * (width - len(e.ids)) for e in encs], device=self.device)
        mask = torch.tensor([[1] * len(e.ids) + [0] * (width - len(e.ids)) for e in encs], device=self.device)
        # logits from the first position an answer token is predicted from; a batch-invariant micro-batch of several
        # rows (GPU) keeps them all, so the output layer's shape is the width's alone, never its batch mates'
        shared = self.invariant and len(encs) > 1
        first = 0 if shared or not self.keeps_logits else min(e.start for e in encs) - 1
        sums = [self._logprob_sums(m, ids, mask, encs[:n], first) for m in self.models]
        out = []
        for i, e in enumerate(encs[:n]):
            reward = sums[0][i] - (sums[1][i] if len(sums) > 1 else 0.0)
            count = e.stop - e.start
            out.append(reward if self.normalize == "sum" else reward / count if count else None)
        return out

    def _logprob_sums(self, model, ids, mask, encs: list[Spanned], first: int) -> list[float]:
        """sum over ids[start:stop] of log p(token | the tokens before it), per row, in float64."""
        import torch

        keep = {"logits_to_keep": ids.shape[1] - first} if self.keeps_logits else {}
        with torch.inference_mode():
            logits = model(input_ids=ids, attention_mask=mask, **keep).logits
            sums = []
            for i, e in enumerate(encs):   # the logits at t - 1 predict token t
                rows = logits[i, e.start - 1 - first:e.stop - 1 - first].float().log_softmax(-1)
                sums.append(rows.gather(-1, ids[i, e.start:e.stop, None]).double().sum().item())
        return sums
