"""Configuration of pytest-budget's own test suite (not of the installed plugin).

pytester is enabled in pyproject.toml (``-p pytester``), not here: with an editable install
this file sits above the suite modules, and ``pytest_plugins`` outside a rootdir conftest
is an error for runs started elsewhere.
"""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--budget-live",
        action="store_true",
        default=False,
        help="also run tests marked 'live' that call a real model endpoint",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--budget-live"):
        return
    skip = pytest.mark.skip(reason="talks to a real model endpoint; run with --budget-live")
    for item in items:
        if "live" in item.keywords:
            item.add_marker(skip)
