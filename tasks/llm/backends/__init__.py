"""One module per provider. Heavy libraries are imported when a backend is built, not here."""
