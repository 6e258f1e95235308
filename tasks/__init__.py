"""prbench's logic in layers, each importing only the ones below it (import-linter contracts in
pyproject.toml; docs/architecture.md): core <- models <- stages <- downstream <- ops. flows/ sits on top."""
