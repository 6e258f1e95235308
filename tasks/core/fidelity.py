"""`common.fidelity`: `corrected` (prbench's behaviour) or `release` (the authors' release,
Martin-qyma/Personalized-RewardBench @ a5c6814, bugs included). Each behaviour where the two differ is a
two-entry mapping {"corrected": ..., "release": ...} kept in the module where the behaviour lives; `pick`
chooses its entry. docs/paper-setting.md lists every one with the release's file and line."""
from __future__ import annotations

from tasks.core.errors import ConfigError

CORRECTED, RELEASE = "corrected", "release"
FIDELITIES = (CORRECTED, RELEASE)
RELEASE_REPO = "Martin-qyma/Personalized-RewardBench"
RELEASE_COMMIT = "a5c6814d22738c264f3c27576f54e50e04e16c10"


def of(params: dict | None) -> str:
    """The run's fidelity (a params dict; a file without the key is prbench's own behaviour)."""
    value = ((params or {}).get("common") or {}).get("fidelity", CORRECTED)
    if value not in FIDELITIES:
        raise ConfigError(f"common.fidelity: unknown '{value}'; valid: {', '.join(FIDELITIES)}")
    return value


def pick(mapping: dict, fidelity: str):
    """The entry of one behaviour's two-entry mapping for this fidelity."""
    if set(mapping) != set(FIDELITIES):
        raise ValueError(f"a fidelity mapping needs exactly {FIDELITIES}, got {sorted(mapping)}")
    if fidelity not in mapping:
        raise ConfigError(f"common.fidelity: unknown '{fidelity}'; valid: {', '.join(FIDELITIES)}")
    return mapping[fidelity]
