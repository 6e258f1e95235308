"""The bottom layer: errors, table schemas, atomic artifacts, params and their schema, determinism, the
stage table (every DVC stage declared once) and dvc.yaml generated from it. Imports nothing of prbench."""
