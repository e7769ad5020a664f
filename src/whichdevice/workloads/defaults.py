"""The suite's defaults that a command's ``--help`` states, apart from ``workloads/suite.py`` so
that the help imports none of what plans and measures the suite (the records, pydantic)."""

from __future__ import annotations

DEFAULT_BUDGET_S = 90.0  # seconds per device
