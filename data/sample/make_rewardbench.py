"""Builds the released-benchmark layout (LaMP-QA rows + chosen/rejected, one Parquet per config
and split) from the LaMP-QA-layout JSON files and the hand-written pairs beside them.

Usage: python data/sample/make_rewardbench.py      (tests check the output is in sync)
"""
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
ITEM = pa.struct([("category", pa.string()), ("id", pa.string()), ("text", pa.string())])
ASPECT = pa.struct([("aspect", pa.string()), ("evidence", pa.string()), ("reason", pa.string())])
SCHEMA = pa.schema([("id", pa.string()), ("question", pa.string()), ("profile", pa.list_(ITEM)),
                    ("rubric_aspects", pa.list_(ASPECT)), ("narrative", pa.string()),
                    ("category", pa.string()), ("chosen", pa.string()), ("rejected", pa.string())])


def build(stem: str) -> pa.Table:
    rows = json.loads((HERE / "lamp_qa" / f"{stem}.json").read_text(encoding="utf-8"))
    pairs = {p["id"]: p for p in json.loads((HERE / "pairs" / f"{stem}.json").read_text(encoding="utf-8"))}
    return pa.Table.from_pylist([{**r, "chosen": pairs[r["id"]]["chosen"],
                                  "rejected": pairs[r["id"]]["rejected"]} for r in rows], schema=SCHEMA)


def target(stem: str) -> Path:
    config, split = stem.rsplit("_", 1)
    return HERE / "rewardbench" / config / f"{split}-00000-of-00001.parquet"


def main():
    for src in sorted((HERE / "lamp_qa").glob("*.json")):
        out = target(src.stem)
        out.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(build(src.stem), out, compression="zstd")
        print(out.relative_to(HERE))


if __name__ == "__main__":
    main()
