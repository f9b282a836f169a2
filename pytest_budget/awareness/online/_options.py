"""The awareness online mode's options, parsed (:mod:`pytest_budget.awareness._options` calls this).

Every bad value raises :class:`OnlineOptionError` with one line naming the option, the
value and what is expected.  Imports nothing heavy.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

__all__ = ["AWARENESS_MODES", "CHARGES", "OnlineOptionError", "parse_online_options"]

#: ``--budget-awareness-mode``: replay (BAGEN's protocol, the default), online, both.
AWARENESS_MODES = ("replay", "online", "both")
#: ``--budget-online-charge``: what the cap is charged with.
CHARGES = ("acting", "both")
_PROTOCOLS = ("single", "two")


class OnlineOptionError(ValueError):
    """A bad online option value (one line)."""


def _choice(option: str, value: Any, choices: tuple[str, ...], default: str) -> str:
    text = str(value if value is not None else default).strip().lower()
    if text not in choices:
        known = ", ".join(choices)
        raise OnlineOptionError(f"{option}: unknown value {text!r}; choose from {known}")
    return text


def _numbers(option: str, value: str) -> tuple[float, ...]:
    out: list[float] = []
    for raw in value.split(","):
        text = raw.strip().lower().rstrip("x")
        if not text:
            continue
        try:
            number = float(text)
        except ValueError:
            raise OnlineOptionError(
                f"{option}: {raw.strip()!r} is not a number (e.g. {option}=0.5,1,2)"
            ) from None
        if not math.isfinite(number) or number <= 0 or number > 100:
            raise OnlineOptionError(f"{option}: {raw.strip()} must be in (0, 100]")
        if number not in out:
            out.append(number)
    if not out:
        raise OnlineOptionError(f"{option}: no value given (e.g. {option}=0.5,1,2)")
    return tuple(out)


def parse_online_options(get_option: Callable[[str], Any]) -> dict[str, Any]:
    """The :class:`~pytest_budget.awareness._options.AwarenessOptions` fields of the online mode."""
    protocols = []
    for raw in str(get_option("budget_online_protocol") or "single").split(","):
        text = raw.strip().lower()
        if text:
            name = _choice("--budget-online-protocol", text, _PROTOCOLS, "single")
            if name not in protocols:
                protocols.append(name)
    episodes_value = get_option("budget_online_episodes")
    try:
        episodes = int(str(episodes_value).strip()) if episodes_value is not None else 32
    except ValueError:
        raise OnlineOptionError(
            f"--budget-online-episodes: {episodes_value!r} is not a whole number"
        ) from None
    if not 2 <= episodes <= 100_000:
        raise OnlineOptionError(f"--budget-online-episodes: must be 2..100000, got {episodes}")
    value_text = get_option("budget_online_success_value")
    try:
        success_value = float(value_text) if value_text is not None else 1.0
    except ValueError:
        raise OnlineOptionError(
            f"--budget-online-success-value: {value_text!r} is not a number (e.g. 1)"
        ) from None
    if not math.isfinite(success_value) or success_value < 0:
        raise OnlineOptionError(
            f"--budget-online-success-value: must be a number >= 0, got {value_text}"
        )
    return {
        "awareness_mode": _choice(
            "--budget-awareness-mode",
            get_option("budget_awareness_mode"),
            AWARENESS_MODES,
            "replay",
        ),
        "online_protocols": tuple(protocols) or ("single",),
        "online_caps": _numbers(
            "--budget-online-caps", str(get_option("budget_online_caps") or "0.5,1,2")
        ),
        "online_charge": _choice(
            "--budget-online-charge", get_option("budget_online_charge"), CHARGES, "acting"
        ),
        "online_episodes": episodes,
        "online_success_value": success_value,
    }
