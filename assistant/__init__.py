"""Offline desktop assistant for small local language models; the layers are in
docs/ARCHITECTURE.md and enforced by the import-linter contracts in pyproject.toml."""

__version__ = "0.1.0"
