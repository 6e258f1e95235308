"""Artifact paths of every stage (relative to the project root). dvc.yaml declares the same
paths; tests/test_dvc_yaml.py keeps the two in step."""
INGEST = {
    "questions": "data/ingest/questions.parquet",
    "profiles": "data/ingest/profiles.parquet",
    "pairs": "data/ingest/pairs.parquet",
    "quarantine": "data/ingest/quarantine.parquet",
    "metrics": "metrics/ingest.json",
    "plot": "plots/ingest_profile_sizes.png",
}
PROFILES = {
    "ranked_profile": "data/profiles/ranked.parquet",
    "profile_context": "data/profiles/context.parquet",
    "metrics": "metrics/profiles.json",
}

# Code each stage runs: part of its Prefect cache key and of its dvc.yaml deps (kept equal by a test).
SHARED_CODE = ["tasks/artifacts.py", "tasks/errors.py", "tasks/schemas.py", "tasks/params.py", "flows/common.py"]
CODE = {
    "ingest": ["flows/ingest.py", "tasks/ingest.py", "tasks/sources.py", "tasks/validate.py", "tasks/plots.py"],
    "profiles": ["flows/profiles.py", "tasks/profiles.py", "tasks/retrieval.py", "tasks/encoders.py"],
}
