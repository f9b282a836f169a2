"""``python -m pytest_budget report ...`` runs the ``budget-report`` command."""

from __future__ import annotations

import sys

from pytest_budget.report._cli import main

if __name__ == "__main__":
    args = sys.argv[1:]
    if not args or args[0] != "report":
        print("usage: python -m pytest_budget report {render,merge} ...", file=sys.stderr)
        raise SystemExit(2)
    raise SystemExit(main(args[1:]))
