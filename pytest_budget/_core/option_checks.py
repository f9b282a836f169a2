"""Reading and checking option values: what every suite's options and the run's share.

Each failure is an :class:`OptionError`: one line naming the option, the value and the fix
(pytest shows it as a usage error, exit status 4).  :class:`OptionReader` is what a
suite's option parser gets: the raw option and ini getters and the two directories
relative paths are read from.  Plain Python: nothing here imports pytest.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "LIST_OPTIONS",
    "MAXIMUMS",
    "OPTION_DESTS",
    "OptionError",
    "OptionReader",
    "check_directory_option",
    "check_empty_values",
    "check_output_file",
    "first_set",
    "parse_float_list",
    "positive_int",
]


class OptionError(ValueError):
    """A bad option value; the message is one line for a usage error."""


@dataclass(frozen=True)
class OptionReader:
    """Raw option values as pytest gives them, for the run's and each suite's parser."""

    get_option: Callable[[str], Any]
    get_ini: Callable[[str], Any]
    rootdir: Path
    invocation_dir: Path

    def input_files(self, dest: str, hint: str) -> tuple[str, ...]:
        """A repeatable path option's files, absolute (relative to where pytest started);
        a missing file is an error ending with ``hint`` (what to give instead)."""
        base = self.invocation_dir
        paths = tuple(str((base / path).resolve()) for path in (self.get_option(dest) or ()))
        for path in paths:
            if not Path(path).is_file():
                raise OptionError(f"{_flag(dest)}: no such file {path}; {hint}")
        return paths

    def size(self) -> Any:
        """The run size in force (:mod:`pytest_budget._core.sizes`): ``--budget-size``, else ini
        ``budget_size``, else ``default``."""
        from pytest_budget._core.sizes import parse_size

        try:
            return parse_size(self.get_option("budget_size") or self.get_ini("budget_size"))
        except ValueError as exc:
            raise OptionError(str(exc)) from None

    def input_file(self, dest: str, hint: str) -> str | None:
        value = self.get_option(dest)
        if not value:
            return None
        path = str((self.invocation_dir / value).resolve())
        if not Path(path).is_file():
            raise OptionError(f"{_flag(dest)}: no such file {path}; {hint}")
        return path


#: The run's string-valued ``--budget-*`` options (their ``dest``): none may be given
#: empty.  Each suite lists its own (:attr:`~pytest_budget._core.registry.SuiteOptions.dests`).
OPTION_DESTS = (
    "budget_suite", "budget_agent", "budget_seed", "budget_concurrency", "budget_report",
    "budget_html", "budget_snapshot_dir", "budget_gate",
    "budget_ci_level", "budget_ci_resamples", "budget_repeat",
    "budget_base_url", "budget_api_key_env", "budget_model_header",
    "budget_max_usd", "budget_record_mode", "budget_price_file", "budget_model_timeout",
    "budget_cache_dir", "budget_retries", "budget_retry_max_s", "budget_shard",
    "budget_max_output_chars", "budget_size", "budget_max_usd_default",
    "budget_markdown",
)  # fmt: skip

#: The run's comma-list options: a value with no item in it (``--budget-suite=,``) is empty too.
LIST_OPTIONS = ("budget_suite", "budget_agent")

#: Upper bounds of whole-number options: past these a run would not finish (generating
#: 10**11 pool items) or not fit in memory, so they are usage errors, not hangs.
MAXIMUMS: dict[str, int] = {
    "--budget-concurrency": 10_000,
    "--budget-repeat": 1_000,
    "--budget-ci-resamples": 1_000_000,
    "--budget-retries": 100,
}


def _flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def check_empty_values(
    get_option: Callable[[str], Any],
    dests: Iterable[str],
    list_dests: Iterable[str] = LIST_OPTIONS,
) -> None:
    """An option given with nothing in it (``--budget-suite=``) is an error, not the
    default: the user meant something and would otherwise get another run than asked.
    ``list_dests`` are comma lists: ``,`` alone is empty too."""
    lists = set(list_dests)
    for dest in dests:
        try:
            value = get_option(dest)
        except ValueError:  # not registered (a caller with its own getter)
            continue
        values = value if isinstance(value, list | tuple) else [value]
        for item in values:
            if not isinstance(item, str):
                continue
            empty = not item.strip()
            if dest in lists and not empty:
                empty = not any(part.strip() for part in item.split(","))
            if empty:
                raise OptionError(
                    f"{_flag(dest)}: empty value {item!r}; give a value (see pytest --help) "
                    "or leave the option out for its default"
                )


def check_output_file(option: str, path: str) -> None:
    """A report path must name a file in an existing, writable directory."""
    target = Path(path)
    if target.is_dir():
        raise OptionError(f"{option}: {path} is a directory; give a file path inside it")
    parent = target.parent
    if not parent.exists():
        raise OptionError(
            f"{option}: directory {parent} does not exist; create it first or give a path "
            "in an existing directory"
        )
    if not parent.is_dir():
        raise OptionError(f"{option}: {parent} is not a directory; give a path in a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OptionError(f"{option}: cannot write in {parent} (permission denied)")


def check_directory_option(option: str, path: str) -> None:
    """A directory the run creates (cache, snapshots): it, and every parent that exists,
    must be a directory (not a file)."""
    target = Path(path)
    if target.exists() and not target.is_dir():
        raise OptionError(f"{option}: {path} is a file; give a directory (it is created)")
    for parent in target.parents:
        if parent.exists():
            if not parent.is_dir():
                raise OptionError(
                    f"{option}: {parent} is a file, so {path} cannot be created; give a "
                    "directory path"
                )
            break


def positive_int(option: str, value: Any, *, minimum: int = 1, maximum: int | None = None) -> int:
    """A whole number of at least ``minimum`` (and at most ``maximum``, or the run's own
    bound for the option in :data:`MAXIMUMS`)."""
    try:
        number = int(str(value).strip())
    except ValueError:
        raise OptionError(f"{option}: {value!r} is not a whole number") from None
    if number < minimum:
        raise OptionError(f"{option}: must be at least {minimum}, got {number}")
    maximum = MAXIMUMS.get(option) if maximum is None else maximum
    if maximum is not None and number > maximum:
        raise OptionError(f"{option}: must be at most {maximum}, got {number}")
    return number


def first_set(*values: Any) -> Any:
    """The first value that was given (0 counts as given; ``None`` and "" do not)."""
    for value in values:
        if value is not None and str(value).strip() != "":
            return value
    return None


def parse_float_list(
    option: str, value: str, *, low: float, high: float, low_open: bool = False
) -> tuple[float, ...]:
    """A comma list of numbers within [low, high] (or (low, high] when ``low_open``)."""
    numbers: list[float] = []
    for raw in str(value).split(","):
        text = raw.strip()
        if not text:
            continue
        try:
            number = float(text)
        except ValueError:
            raise OptionError(
                f"{option}: {text!r} is not a number (expected e.g. {option}=0.5,1.0)"
            ) from None
        below = number <= low if low_open else number < low
        if not math.isfinite(number) or below or number > high:
            bracket = "(" if low_open else "["
            raise OptionError(f"{option}: {text} is outside {bracket}{low:g}, {high:g}]")
        if number not in numbers:
            numbers.append(number)
    if not numbers:
        raise OptionError(f"{option}: no values given (expected e.g. {option}=0.5,1.0)")
    return tuple(numbers)
