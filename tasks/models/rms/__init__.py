"""Reward models: one interface (base.py), a registry of kinds driven by params entries (registry.py).
Kept empty: what imports the interface need not import every kind."""
