"""Reward models: one interface, a registry of kinds driven by params entries."""
from tasks.rms.base import PairInput, PairScore, RewardModel
from tasks.rms.registry import KINDS, make_rm

__all__ = ["PairInput", "PairScore", "RewardModel", "KINDS", "make_rm"]
