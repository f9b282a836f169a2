"""The interval defaults: resamples per cell and two-sided coverage.

Below both :mod:`pytest_budget._stats.bootstrap` (which must not import the option layer) and
:mod:`pytest_budget._run.options` (which must not import numpy); both re-export them.
"""

from __future__ import annotations

__all__ = ["DEFAULT_LEVEL", "DEFAULT_RESAMPLES"]

#: Bootstrap resamples per cell unless ``--budget-ci-resamples`` says otherwise.
DEFAULT_RESAMPLES = 1000
#: Two-sided coverage of the intervals unless ``--budget-ci-level`` says otherwise.
DEFAULT_LEVEL = 0.95
