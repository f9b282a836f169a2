"""The package version, in one place (kept in step with pyproject.toml by a test)."""

__version__ = "0.1.0"
