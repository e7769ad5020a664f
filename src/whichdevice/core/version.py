"""The package version, here so that records (core) can stamp it without importing the package root."""

__version__ = "0.1.0"
