"""trl 1.12's PPO, GRPO and RLOO behind one call, with the RM adapter as the reward.

- GRPO/RLOO take the reward as a function (`RMReward.reward_func`).
- PPO takes a sequence-classification module: `PPOReward` decodes trl's token rows back to (question,
  completion), asks the same RMReward, and returns the score as hidden states under an identity
  `.score` head. Rollouts are scored right after generation, one RMReward call per step (`ScreenedPPO`).
A failed reward reaches neither as a gap: RMReward hands it back as the worst of its step (reward.py).
"""
from __future__ import annotations

from unittest import mock

import torch
from torch import nn

from tasks.core.errors import ConfigError


def training_tokenizer(folder: str, kwargs: dict, messages: list[list[dict]]):
    """(tokenizer, prompt ids): the policy's tokenizer, left-padded, with a pad token that no prompt
    contains — trl's PPO masks every pad id, and the end-of-turn token is often the default pad."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder, **kwargs)
    tok.padding_side = "left"
    ids = [list(tok.apply_chat_template(m, add_generation_prompt=True, return_dict=True)["input_ids"])
           for m in messages]
    used = {t for row in ids for t in row}
    for candidate in (tok.pad_token, tok.unk_token, tok.bos_token, tok.eos_token):
        tid = tok.convert_tokens_to_ids(candidate) if candidate else None
        if tid is not None and tid not in used and tid != tok.eos_token_id:
            tok.pad_token = candidate
            return tok, ids
    raise ConfigError(f"rl.policy: the tokenizer of {folder} has no special token free to pad with")


class _Rows:
    """Maps trl's left-padded token rows back to (question id, completion ids)."""

    def __init__(self, prompt_ids: list[list[int]], question_ids: list[str], pad_id: int):
        self.by_length: dict[int, dict[tuple, str]] = {}
        for ids, q in zip(prompt_ids, question_ids):
            self.by_length.setdefault(len(ids), {})[tuple(ids)] = q
        self.pad_id = pad_id

    def split(self, row: list[int]) -> tuple[str, int, tuple]:
        """(question id, context length, completion ids up to the first pad) of one sequence."""
        start = next((i for i, t in enumerate(row) if t != self.pad_id), len(row))
        for n, table in self.by_length.items():
            q = table.get(tuple(row[start:start + n]))
            if q is not None:
                rest = row[start + n:]
                end = rest.index(self.pad_id) if self.pad_id in rest else len(rest)
                return q, start + n, tuple(rest[:end])
        raise ValueError("a rollout whose prompt is not in the training set")


class PPOReward(nn.Module):
    """An RMReward as trl's PPO reward model: backbone -> hidden_states[-1] = score at every position."""
    base_model_prefix = "backbone"

    def __init__(self, reward, tokenizer, rows: _Rows):
        super().__init__()
        self.reward, self.tokenizer, self.rows = reward, tokenizer, rows
        self.pending: list[tuple[str, tuple, float]] = []   # the screened step, in trl's row order
        self.backbone = _Backbone(self)
        self.score = nn.Identity()

    def text(self, ids: tuple) -> str:
        return self.tokenizer.decode(list(ids), skip_special_tokens=True).strip()

    def screen(self, rows: list[list[int]]) -> list[float]:
        """Score one step's rollouts (one RMReward call = one step); trl then asks for them row by row."""
        split = [self.rows.split(r) for r in rows]
        rewards = self.reward([q for q, _, _ in split], [self.text(c) for _, _, c in split])
        self.pending = [(q, c, r) for (q, _, c), r in zip(split, rewards)]
        return rewards

    def forward_rows(self, input_ids, attention_mask):
        pad = self.rows.pad_id
        full = torch.where(attention_mask.bool(), input_ids, torch.full_like(input_ids, pad))
        rows = full.tolist()
        if not self.pending:   # outside a screened rollout (e.g. trl's sample generations): score now
            self.screen(rows)
        mine, self.pending = self.pending[:len(rows)], self.pending[len(rows):]
        out = torch.zeros(full.shape[0], device=full.device)
        for i, (row, (q, c, r)) in enumerate(zip(rows, mine)):
            q_row, _, c_row = self.rows.split(row)
            if (q_row, c_row) != (q, c):
                raise RuntimeError("PPO asked for the reward of a rollout that was not screened")
            out[i] = r
        return out[:, None, None].expand(-1, full.shape[1], 1).contiguous()


class _Backbone(nn.Module):
    def __init__(self, owner: PPOReward):
        super().__init__()
        self._owner = [owner]   # a list, so the parent is not registered as a child module

    def forward(self, input_ids, attention_mask, **_):
        from types import SimpleNamespace

        return SimpleNamespace(hidden_states=(self._owner[0].forward_rows(input_ids, attention_mask),))


def _screened_ppo_class():
    from trl.experimental.ppo import ppo_trainer as ppo_module
    from trl.experimental.ppo.ppo_trainer import PPOTrainer, truncate_response

    generate = ppo_module.batch_generation

    class ScreenedPPO(PPOTrainer):
        """Scores each step's rollouts in one RMReward call, right after generation."""

        def train(self):
            with mock.patch.object(ppo_module, "batch_generation", self._generate_screened):
                return super().train()

        def _generate_screened(self, model, queries, forward_batch_size, pad_token_id, generation_config):
            query_responses, logits = generate(model, queries, forward_batch_size, pad_token_id, generation_config)
            responses = query_responses[:, queries.shape[1]:]
            if self.stop_token_id is not None:
                responses = truncate_response(self.stop_token_id, pad_token_id, responses)
            self.reward_model.screen(torch.cat((queries, responses), 1).tolist())
            return query_responses, logits

    return ScreenedPPO


LR_SCHEDULES = ("constant", "linear")   # verl's actor/critic default is constant; trl's own default decays to 0


def sizes(t: dict) -> tuple[int, int, int]:
    """(micro, mini, batch): rollouts per forward/backward, per optimizer step, per update (one generation
    round). batch / mini optimizer steps per update, as verl's ppo_mini_batch_size."""
    micro, batch = int(t["micro_batch_size"]), int(t["batch_size"])
    mini = int(t.get("mini_batch_size") or batch)
    if batch % mini or mini % micro:
        raise ConfigError(f"rl.train: need micro_batch_size ({micro}) | mini_batch_size ({mini}) | batch_size ({batch}),"
                          " each a multiple of the one before")
    if t.get("lr_schedule", "constant") not in LR_SCHEDULES:
        raise ConfigError(f"rl.train.lr_schedule: unknown '{t.get('lr_schedule')}'; valid: {', '.join(LR_SCHEDULES)}")
    return micro, mini, batch


def ppo(policy, value_model, tok, prompt_ids, question_ids, reward, t: dict, seed: int, work: str):
    from datasets import Dataset
    from trl.experimental.ppo import PPOConfig

    micro, mini, batch = sizes(t)
    groups = [{"params": [p for p in policy.parameters() if p.requires_grad], "lr": float(t["actor_lr"])},
              {"params": [p for p in value_model.parameters() if p.requires_grad], "lr": float(t["critic_lr"])}]
    args = PPOConfig(
        output_dir=work, seed=seed, data_seed=seed, learning_rate=float(t["actor_lr"]),
        per_device_train_batch_size=micro, gradient_accumulation_steps=batch // micro, num_mini_batches=batch // mini,
        local_rollout_forward_batch_size=micro, num_ppo_epochs=int(t["ppo_epochs"]),
        total_episodes=int(t["updates"]) * batch if t.get("updates") else None, num_train_epochs=float(t["epochs"]),
        response_length=int(t["response_length"]), temperature=float(t["temperature"]), kl_coef=float(t["kl_coef"]),
        lam=float(t["lam"]), cliprange_value=float(t["cliprange_value"]),
        stop_token="eos", missing_eos_penalty=None, num_sample_generations=0, logging_steps=1,
        **_common_args(t))
    rows = _Rows(prompt_ids, question_ids, tok.pad_token_id)
    reward_model = PPOReward(reward, tok, rows)
    trainer = _screened_ppo_class()(
        args=args, processing_class=tok, model=policy, ref_model=None, reward_model=reward_model,
        value_model=value_model, train_dataset=Dataset.from_dict({"input_ids": prompt_ids}),
        optimizers=(torch.optim.AdamW(groups, weight_decay=0.0), None))
    # trl's PPO takes its batch as micro x gradient_accumulation_steps and hands that count to accelerate, which
    # would step once per batch whatever num_mini_batches says, and at every micro-batch of a dataloader's last
    # batch (sync_with_dataloader; the toy sets are one batch): step exactly once per mini-batch instead
    trainer.accelerator.gradient_state.plugin_kwargs.update(num_steps=mini // micro, sync_with_dataloader=False)
    return trainer


def group_relative(config, trainer_cls, policy, tok, messages, question_ids, reward, t: dict, seed: int, work: str):
    """GRPO or RLOO (trl's config and trainer classes): `num_generations` completions per prompt, rewards
    relative to their group."""
    from datasets import Dataset

    (micro, mini, batch), g = sizes(t), int(t["num_generations"])
    if batch % g:
        raise ConfigError(f"rl.train.batch_size ({batch}) must be a multiple of rl.train.num_generations ({g})")
    # one generation round of `batch` rollouts per update, cut into batch / mini optimizer steps
    args = config(
        output_dir=work, seed=seed, data_seed=seed, learning_rate=float(t["actor_lr"]),
        per_device_train_batch_size=micro, gradient_accumulation_steps=mini // micro, num_generations=g,
        steps_per_generation=batch // micro,
        max_completion_length=int(t["response_length"]), temperature=float(t["temperature"]), top_p=1.0,
        beta=float(t["kl_coef"]), max_steps=int(t["updates"]) * (batch // mini) if t.get("updates") else -1,
        num_train_epochs=float(t["epochs"]), logging_steps=1, log_completions=False, **_common_args(t))
    dataset = Dataset.from_dict({"prompt": messages, "question_id": question_ids})
    return trainer_cls(model=policy, args=args, processing_class=tok, reward_funcs=[reward.reward_func()],
                       train_dataset=dataset)


def _common_args(t: dict) -> dict:
    return dict(report_to="none", save_strategy="no", bf16=False, fp16=False, activation_checkpointing=False,
                use_cpu=not torch.cuda.is_available(), disable_tqdm=True, dataloader_num_workers=0,
                lr_scheduler_type=t.get("lr_schedule", "constant"), warmup_steps=0)


def step_logs(trainer, steps_per_update: int = 1) -> list[dict]:
    """Per update: trl's KL and entropy (PPO logs once per update: objective/*; GRPO/RLOO once per optimizer
    step, averaged here over the update's steps; kl only when beta > 0)."""
    logs = [h for h in trainer.state.log_history if "step" in h and ("objective/kl" in h or "entropy" in h)]
    rows = [{"kl": h.get("objective/kl", h.get("kl")), "entropy": h.get("objective/entropy", h.get("entropy"))}
            for h in logs]
    if "objective/kl" in (logs[0] if logs else {}) or steps_per_update == 1:
        return rows
    out = []
    for i in range(0, len(rows), steps_per_update):
        group = rows[i:i + steps_per_update]
        out.append({k: (sum(r[k] for r in group) / len(group) if all(r[k] is not None for r in group) else None)
                    for k in ("kl", "entropy")})
    return out
