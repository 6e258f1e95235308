"""The BoN artifacts' schemas live with every other schema in tasks/core/schemas.py."""
from tasks.core.schemas import BON_CURVE, BON_JUDGED, BON_PER_QUESTION, BON_SAMPLES, BON_SCORES  # noqa: F401
