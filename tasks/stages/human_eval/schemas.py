"""The human_eval stage's artifact schemas live with every other schema in tasks/core/schemas.py."""
from tasks.core.schemas import HUMAN_EVAL_KEY, HUMAN_RATINGS, PROXY_REPLIES  # noqa: F401
