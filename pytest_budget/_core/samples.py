"""Samples: the items, probes and episodes behind a cell's scores, as plain JSON records.

Every installed suite's cell record carries a ``samples`` array (``docs/reference/report.md``):
one object per triage pool item, awareness probe or planning episode, each with

* ``id``: unique within the cell (an item id, ``<rollout>#<k>``, a query id);
* ``score``: the sample's own score, higher is better, or ``null`` where the sample has
  none (an item the plan left out, a probe of a failed rollout, an excluded episode);
* ``tags``: its outcomes (``invalid``, ``miss``, ``false abort``, ``wrong answer``,
  ``over budget``, ...), which the HTML report filters on;

plus the suite's own fields (built by ``triage/samples.py``, ``awareness/samples.py`` and
``planning/samples.py``).  Texts an agent or a user wrote are clipped to
:data:`SAMPLE_TEXT_LIMIT` characters and go through :func:`scrub`: URL credentials, the
values of the API key variables, ``--budget-model-header`` values and anything shaped like
an ``Authorization`` header or a provider key are masked before they reach a file.  Plain
Python: no pytest.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pytest_budget._core.redact import MASK, redact_text
from pytest_budget._core.replies import safe_repr

__all__ = [
    "SAMPLE_TEXT_LIMIT",
    "Scrubber",
    "clip",
    "env_secrets",
    "might_hold_secrets",
    "options_secrets",
    "scrub",
    "scrub_tree",
    "scrubber",
    "shown",
]

#: Longest text kept per field of a sample (agent output, problem text, observation).
SAMPLE_TEXT_LIMIT = 4000

Scrubber = Callable[[str], str]

# "Authorization: Bearer abc", "authorization=abc", "x-api-key: abc" (header-shaped secrets)
_HEADER = re.compile(
    r"(?i)\b(authorization|proxy-authorization|x-api-key|api[-_]?key)(\"?\s*[:=]\s*\"?)"
    r"((?:bearer|basic|token)\s+)?[^\s\"',;]+"
)
_BEARER = re.compile(r"(?i)\b(bearer|basic)(\s+)[A-Za-z0-9._~+/=-]{8,}")
# OpenAI / Anthropic style keys
_KEYLIKE = re.compile(r"\bsk-[A-Za-z0-9_-]{12,}")
#: The variables the model layer reads API keys from (models/provider.py).
_KEY_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")


def clip(text: str, limit: int = SAMPLE_TEXT_LIMIT) -> str:
    """``text`` cut to ``limit`` characters, the middle replaced by a marker saying how much."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters left out ...]\n{text[-half:]}"


def shown(value: object, limit: int = SAMPLE_TEXT_LIMIT) -> str:
    """Any agent reply as text for a sample: text as it is (the caller clips and scrubs
    it), anything else as :func:`~pytest_budget._core.replies.safe_repr` writes it in ``limit``
    characters (a huge integer, deep nesting, cycles, repeated references and a ``repr``
    that raises all read safely, and the same in every run)."""
    return value if isinstance(value, str) else safe_repr(value, limit)


def env_secrets(api_key_env: str | None = None, header_envs: Iterable[str] = ()) -> list[str]:
    """Secret values of this process: the API key variables' values and the values of the
    ``--budget-model-header NAME=ENV_VAR`` variables (and of each word in them: the token
    of ``Bearer abc`` may be echoed alone)."""
    names = [*_KEY_VARIABLES, *([api_key_env] if api_key_env else [])]
    names += [spec.partition("=")[2].strip() for spec in header_envs]
    values: list[str] = []
    for name in names:
        value = os.environ.get(name, "").strip() if name else ""
        if value:
            values.append(value)
            values.extend(part for part in value.split() if len(part) >= 8)
    return [value for value in values if len(value) >= 3]


def options_secrets(options: Any) -> list[str]:
    """:func:`env_secrets` for a run's options (``api_key_env``, ``model_headers``)."""
    return env_secrets(
        getattr(options, "api_key_env", None), getattr(options, "model_headers", ()) or ()
    )


def scrub(text: str, secrets: Sequence[str] = ()) -> str:
    """``text`` with credentials masked (see the module docstring)."""
    if not _maybe_secret(text, secrets):
        return text
    text = redact_text(text, secrets)
    text = _HEADER.sub(lambda m: f"{m.group(1)}{m.group(2)}{m.group(3) or ''}{MASK}", text)
    text = _BEARER.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", text)
    return _KEYLIKE.sub(MASK, text)


def scrubber(secrets: Sequence[str] = ()) -> Scrubber:
    """A one-argument :func:`scrub` for these secrets that also clips."""
    return _scrubber(tuple(secrets))


#: Texts remembered per scrubber: cells of one run replay the same rollouts, so their turns
#: are scrubbed again and again (a dict look-up instead of a scan of the text).  Only short
#: texts, and at most this many characters of them (then the memo starts again), so a
#: hostile agent's 10 MB replies are never kept alive by it.
_MEMO_TEXT = 8_000
_MEMO_CHARS = 16_000_000


@functools.lru_cache(maxsize=8)
def _scrubber(frozen: tuple[str, ...]) -> Scrubber:
    memo: dict[str, str] = {}
    held = [0]  # characters of the texts in memo

    def run(text: str) -> str:
        done = memo.get(text)
        if done is None:
            done = clip(scrub(text, frozen))
            if len(text) <= _MEMO_TEXT:
                if held[0] + len(text) > _MEMO_CHARS:
                    memo.clear()
                    held[0] = 0
                memo[text] = done
                held[0] += len(text)
        return done

    return run


def scrub_tree(value: Any, secrets: Sequence[str] = ()) -> Any:
    """A copy of a JSON value with every string scrubbed (the HTML page's last guard)."""
    if isinstance(value, str):
        return scrub(value, secrets)
    if isinstance(value, Mapping):
        return {key: scrub_tree(item, secrets) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [scrub_tree(item, secrets) for item in value]
    return value


#: Words one of which every text :func:`scrub` would change contains (lower case).
_KEYWORDS = ("authorization", "api-key", "api_key", "apikey", "bearer", "basic", "sk-", "://")


def might_hold_secrets(text: str, secrets: Sequence[str] = ()) -> bool:
    """False when ``text`` certainly holds nothing :func:`scrub` would mask."""
    return _maybe_secret(text, secrets)


def _maybe_secret(text: str, secrets: Sequence[str]) -> bool:
    """Cheap pre-check (substring tests, no regular expression) so scrubbing tens of
    thousands of texts stays fast."""
    low = text.lower()
    return any(word in low for word in _KEYWORDS) or any(secret in text for secret in secrets)
