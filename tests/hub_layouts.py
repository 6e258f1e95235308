"""Each benchmark as its publisher lays it out on the hub (read from their dataset cards and loaders),
filled with the rows of our hand-written fixtures (data/benchmarks/fixtures) so the numbers are known:

  QiyaoMa/Personalized-RewardBench           configs Art_and_Entertainment, Lifestyle_and_Personal_Development,
                                             Society_and_Culture: <config>/test-00000-of-00001.parquet
  MichaelR207/chatbot_arena_personalized_0125 one split `train`: data/train-00000-of-00001.parquet, a `split`
                                             column (train / val / test)
  THU-KEG/RM-Bench                           total_dataset.json (a JSON array), no card configs: split `train`
  lmarena-ai/PPE-Human-Preference-V1         data/test-00000-of-00001.parquet
  allenai/reward-bench-2                     data/test-00000-of-00001.parquet (chosen / rejected lists)
  HannahRoseKirk/prism-alignment             configs survey (survey.jsonl), conversations (conversations.jsonl):
                                             split train, nested turns and stated_prefs"""
from __future__ import annotations

import json
from pathlib import Path

from tests.fakes.hf_datasets import card, jsonl, parquet

ROOT = Path(__file__).resolve().parents[1]
F = ROOT / "data" / "benchmarks" / "fixtures"
SAMPLE = ROOT / "data" / "sample" / "rewardbench"
DOMAINS = ("Art_and_Entertainment", "Lifestyle_and_Personal_Development", "Society_and_Culture")


def _rows(name: str) -> list[dict]:
    return [json.loads(line) for line in (F / name).read_text().splitlines() if line.strip()]


def _text(v) -> str:
    """A message or list of messages as its (last) content: one column type per Parquet column."""
    if isinstance(v, list):
        v = v[-1]
    return v["content"] if isinstance(v, dict) else v


def personalised() -> dict:
    files = {f"{c}/test-00000-of-00001.parquet": (SAMPLE / c / "test-00000-of-00001.parquet").read_bytes()
             for c in DOMAINS}
    return {"README.md": card({c: {"test": f"{c}/test-*"} for c in DOMAINS}), **files}


def personal_rewardbench() -> dict:
    rows = [{"user_id": r["user_id"], "prompt": _text(r["prompt"]), "chosen": _text(r["chosen"]),
             "rejected": _text(r["rejected"]), "split": r["split"]}
            for r in _rows("personal-rewardbench.jsonl")]
    return {"README.md": card({"default": {"train": "data/train-*"}}), "data/train-00000-of-00001.parquet": parquet(rows)}


def rm_bench() -> dict:
    return {"README.md": card(None), "total_dataset.json": (F / "rm-bench.json").read_bytes()}


def ppe_human() -> dict:
    return {"README.md": card({"default": {"test": "data/test-*"}}),
            "data/test-00000-of-00001.parquet": parquet(_rows("ppe-human.jsonl"))}


def rewardbench2() -> dict:
    return {"README.md": card({"default": {"test": "data/test-*"}}),
            "data/test-00000-of-00001.parquet": parquet([{**r, "additional_metadata": r.get("additional_metadata") or
                                                          {"source": ""}} for r in _rows("rewardbench2.jsonl")])}


def prism() -> dict:
    return {"README.md": card({"survey": {"train": "survey.jsonl"}, "conversations": {"train": "conversations.jsonl"}}),
            "survey.jsonl": (F / "prism" / "survey.jsonl").read_bytes(),
            "conversations.jsonl": (F / "prism" / "conversations.jsonl").read_bytes()}


# benchmark -> (hub id, the layout's files, its local fixture)
LAYOUTS = {
    "personalised": ("QiyaoMa/Personalized-RewardBench", personalised, SAMPLE),
    "personal-rewardbench": ("MichaelR207/chatbot_arena_personalized_0125", personal_rewardbench,
                             F / "personal-rewardbench.jsonl"),
    "rm-bench": ("THU-KEG/RM-Bench", rm_bench, F / "rm-bench.json"),
    "ppe-human": ("lmarena-ai/PPE-Human-Preference-V1", ppe_human, F / "ppe-human.jsonl"),
    "rewardbench2": ("allenai/reward-bench-2", rewardbench2, F / "rewardbench2.jsonl"),
    "prism": ("HannahRoseKirk/prism-alignment", prism, F / "prism"),
}


def probe(jobs: list[dict]) -> list[dict]:
    """Each job {benchmark, hub_id?, revision?, path?}: its items scored by length-longer, or its error line.
    Run in a child process whose HF_ENDPOINT is the fake hub (the clients read it at import)."""
    from tasks.core.errors import ConfigError, DataError
    from tasks.models.rms.registry import make_rm
    from tasks.stages.benchmarks import scoring

    rm = make_rm("length-longer", {"kind": "length-longer"}, None)
    out = []
    for job in jobs:
        if "download" in job:   # `hf download ID --repo-type dataset --revision REV --local-dir DIR`, as a user fetches
            from huggingface_hub import snapshot_download

            repo, rev, folder = job["download"]
            out.append({"folder": snapshot_download(repo, repo_type="dataset", revision=rev, local_dir=folder)})
            continue
        if "argv" in job or "ingest" in job:
            out.append(_cli(job["argv"]) if "argv" in job else _ingest(job["ingest"]))
            continue
        name = job["benchmark"]
        try:
            bench, items = scoring.load(name, {"source": name, "path": job.get("path"), "hub_id": job.get("hub_id"),
                                               "revision": job.get("revision")})
        except (ConfigError, DataError) as exc:
            out.append({"error": str(exc)})
            continue
        rows = scoring.score(rm, name, bench, items)
        m = scoring.summary(rows, bench, {"tie_policy": "strict", "bootstrap": 50, "ci": 0.95}, 0)
        out.append({"items": len(items), "revision": bench.revision, "subsets": sorted({it.subset for it in items}),
                    "profiles": sum(bool(it.profile) for it in items),
                    "accuracy": {s: e["accuracy"] for s, e in m["strategies"].items()},
                    "published": m["strategies"]["none"]["published"]})
    return out


def _cli(argv: list[str]) -> dict:
    """`prbench score ...` as a user runs it: its exit code and the results.json it wrote."""
    from flows import cli

    rc = cli.main(argv)
    return {"rc": rc, "metrics": json.loads((Path(argv[argv.index("--out") + 1]) / "results.json").read_text())}


def _ingest(params: dict) -> dict:
    """`ingest.source: hub` of the released layout: the pairs read and the revision it records."""
    from tasks.stages import ingest

    res = ingest.ingest_from_params(params)
    m = ingest.ingest_metrics(res)
    return {"pairs": m["pairs"], "revision": m.get("revision"), "files": [f["file"] for f in m["files"]]}


if __name__ == "__main__":   # python -m tests.hub_layouts JOBS.json OUT.json
    import sys

    Path(sys.argv[2]).write_text(json.dumps(probe(json.loads(Path(sys.argv[1]).read_text()))))
