"""Pasur: rules engine, exact solver, and the paper's tensor CFR pipeline."""
