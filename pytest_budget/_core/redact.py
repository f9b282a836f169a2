"""Credentials never leave the process: URL user info and secret values, masked in text.

A base URL may carry credentials (``https://user:pass@host/v1``, for gateways with basic
authentication); extra request headers may carry tokens.  Both are sent only as request
headers.  Everything the run shows or writes (the report's options, the HTML page, error
messages, cache keys, log lines) goes through :func:`redact_url` or :func:`redact_text`.
Plain Python: no pytest.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import unquote, urlsplit, urlunsplit

__all__ = ["MASK", "redact_text", "redact_url", "split_credentials"]

MASK = "***"
# scheme://userinfo@ : the user info is everything up to the last "@" before the host ends.
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/?#\s]*@")


def split_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """``url`` without its user info, and the (user, password) it held (percent-decoded),
    or None when it held none."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo, _, host = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    clean = urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
    return clean, (unquote(user), unquote(password))


def redact_url(url: str | None) -> str | None:
    """``url`` with any user info replaced by ``***`` (``https://***@host/v1``)."""
    if url is None:
        return None
    return _USERINFO.sub(lambda match: f"{match.group(1)}{MASK}@", url)


def redact_text(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with URL user info and every given secret value masked."""
    text = _USERINFO.sub(lambda match: f"{match.group(1)}{MASK}@", text)
    for secret in sorted((s for s in secrets if s), key=len, reverse=True):
        if len(secret) >= 3:  # masking "a" everywhere would only garble the message
            text = text.replace(secret, MASK)
    return text
