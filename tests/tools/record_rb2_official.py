"""Record reward-bench's own RewardBench 2 scoring on hand-made cases, for tests/test_rb2_official.py.

The `rewardbench` package cannot be installed beside prbench (it pins transformers==4.51.0 and imports
fastchat and torch at import), so its two scoring functions are taken from the wheel's utils.py source
(with ast: only those functions and their helper, none of the module's imports) and run here:

    pip download rewardbench==0.1.4 --no-deps -d /tmp/rb && unzip -o /tmp/rb/*.whl -d /tmp/rb/x
    python tests/tools/record_rb2_official.py /tmp/rb/x/rewardbench/utils.py > tests/data/rb2_official.json
"""
from __future__ import annotations

import ast
import hashlib
import json
import math
import sys
from collections import defaultdict

import numpy as np
import pandas as pd

WANTED = ("sample_stats", "process_single_model", "reroll_and_score_dataset")

# Ties cases: items {id: ref:<n> | tied:<n>, scores (correct first), num_correct}
TIES = {
    "clear": [("ref:1", [5, 1, 0], 1), ("tied:1", [6, 5, 2, 1], 2), ("ref:2", [3, 4], 1), ("tied:2", [4, 1, 2, 0], 2)],
    "tied scores": [("ref:1", [2, 2, 1], 1), ("tied:1", [3, 3, 3, 1], 3), ("ref:2", [1, 0], 1), ("tied:2", [2, 1, 2], 2)],
    "zero spread": [("ref:1", [5, 1], 1), ("tied:1", [4, 4, 1], 2), ("ref:2", [5, 1], 1), ("tied:2", [6, 3, 1], 2)],
    "missing spread": [("ref:1", [5, 1], 1), ("tied:1", [4, 1, 0], 1), ("ref:2", [5, 1], 1), ("tied:2", [6, 3, 1], 2)],
    "tied without ref": [("ref:1", [5, 1], 1), ("tied:1", [6, 3, 1], 2), ("tied:7", [1, 2, 0], 2)],
    "no spread at all": [("ref:1", [5, 1], 1), ("tied:1", [4, 1, 0], 1)],
}
# best-of-4 items outside Ties: scores, the correct answer first
BEST_OF_N = [[4, 1, 2, 3], [4, 4, 1, 0], [4, 4, 4, 1], [4, 4, 4, 4], [1, 4, 2, 3], [0.5, 0.5, 0.25, 0.5]]


def load(utils_py: str) -> dict:
    """The wanted functions from reward-bench's utils.py, compiled alone with what they use."""
    tree = ast.parse(open(utils_py, encoding="utf-8").read())
    body = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in WANTED]
    from datasets import Dataset

    scope = {"np": np, "pd": pd, "math": math, "defaultdict": defaultdict, "Dataset": Dataset,
             "Dict": dict, "List": list, "Tuple": tuple, "Any": object, "Union": object}
    exec(compile(ast.Module(body=body, type_ignores=[]), utils_py, "exec"), scope)   # noqa: S102 - their code
    return scope


def main(utils_py: str) -> dict:
    from datasets import Dataset

    f = load(utils_py)
    ties = {}
    for name, items in TIES.items():
        ds = Dataset.from_list([{"id": i, "scores": [float(x) for x in s], "num_correct": k} for i, s, k in items])
        score = f["process_single_model"](ds)[1]
        ties[name] = {"items": items, "score": None if score is None or math.isnan(score) else score}
    flat = [{"text": f"a{j}", "scores": float(x), "id": str(i), "subset": "Math"}
            for i, s in enumerate(BEST_OF_N) for j, x in enumerate(s)]
    rerolled = f["reroll_and_score_dataset"](Dataset.from_list(flat), [len(s) for s in BEST_OF_N])
    best = [{"scores": s, "result": float(r)} for s, r in zip(BEST_OF_N, rerolled["results"])]
    source = open(utils_py, "rb").read()
    return {"made_by": __doc__.strip().splitlines()[-1].strip(), "package": "rewardbench 0.1.4 (PyPI)",
            "utils_py_sha256": hashlib.sha256(source).hexdigest(), "ties": ties, "best_of_n": best}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1]), indent=1))
