"""Checks of a model endpoint before a run spends anything.

One cheap, free ``GET`` of the provider's model list (``{base}/models`` for OpenAI-compatible
servers, ``{base}/v1/models/{model}`` for Anthropic) tells apart the failures a user can fix
before the run: a server that does not answer, a key it rejects (401/403), a URL that serves
a web page instead of the API, and a model it does not serve.  Servers without a model
list (404, 405, 501 on the list itself) are not checked further: the first real call will
say what is wrong.  Every failure is a one-line :class:`PreflightError` without the key.
"""

from __future__ import annotations

import base64
import ssl
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

import httpx

from pytest_budget._core.redact import redact_url, split_credentials
from pytest_budget.models._client import ANTHROPIC_VERSION
from pytest_budget.models._provider import DEFAULT_API_KEY_ENVS, endpoint_settings, gateway_headers

__all__ = ["PreflightError", "preflight"]

_UNCHECKABLE = frozenset({404, 405, 501})


class PreflightError(ValueError):
    """An endpoint problem found before the run; one line, no secrets."""


def _looks_like_html(response: httpx.Response) -> bool:
    kind = response.headers.get("content-type", "")
    head = response.text[:200].lstrip().lower()
    return "html" in kind or head.startswith(("<!doctype", "<html"))


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def _certificate_problem(exc: BaseException) -> str | None:
    """Why the server's certificate was refused, if that is what failed."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ssl.SSLCertVerificationError):
            return str(seen.verify_message or seen.reason or "certificate verify failed")
        seen = seen.__cause__ or seen.__context__
    return None


def preflight(
    provider: str,
    model: str,
    *,
    base_url: str | None,
    api_key_env: str | None,
    timeout: float = 5.0,
    header_envs: Sequence[str] = (),
) -> None:
    """Raise :class:`PreflightError` when ``provider:model`` at ``base_url`` cannot work."""
    root, key = endpoint_settings(provider, model, base_url, api_key_env)
    # Credentials in the URL go as Basic authorization, as the chat clients send them (an
    # OpenAI key fills the header first); messages show the URL without them.
    shown = redact_url(root) or root
    root, credentials = split_credentials(root)
    variable = api_key_env or DEFAULT_API_KEY_ENVS[provider]
    headers: dict[str, str] = {}
    if provider == "anthropic":
        headers["anthropic-version"] = ANTHROPIC_VERSION
        if key:
            headers["x-api-key"] = key
        url = f"{root}/v1/models/{quote(model, safe='')}"
    else:
        if key:
            headers["authorization"] = f"Bearer {key}"
        url = f"{root}/models"
    if credentials is not None and "authorization" not in headers:
        token = base64.b64encode(":".join(credentials).encode()).decode("ascii")
        headers["authorization"] = f"Basic {token}"
    headers.update({name.lower(): value for name, value in gateway_headers(header_envs).items()})
    name = f"{provider}:{model}"
    try:
        with httpx.Client(timeout=timeout) as http:
            response = http.get(url, headers=headers)
    except httpx.TimeoutException:
        raise PreflightError(
            f"{name}: {shown} did not answer within {timeout:g} s; is the server up "
            "and --budget-base-url right?"
        ) from None
    except httpx.HTTPError as exc:
        reason = _certificate_problem(exc)
        if reason is not None:
            raise PreflightError(
                f"{name}: the TLS certificate of {shown} is not trusted ({reason}); if the "
                "server uses a private certificate authority, point SSL_CERT_FILE at its "
                "certificate"
            ) from None
        raise PreflightError(
            f"{name}: cannot reach {shown} ({type(exc).__name__}); is the server "
            "running and --budget-base-url right?"
        ) from None
    if response.status_code in (401, 403):
        raise PreflightError(
            f"{name}: {shown} rejected the API key (HTTP {response.status_code}); "
            f"check the key in ${variable}"
        )
    if response.is_success and _looks_like_html(response):
        raise PreflightError(
            f"{name}: {shown} answered with an HTML page, not the API; the base URL "
            "should point at the API root, e.g. http://host:8000/v1"
        )
    if provider == "anthropic":
        if response.status_code == 404 and isinstance(_json(response), dict):
            raise PreflightError(f"{name}: {shown} does not know model {model!r}")
        return
    if response.status_code in _UNCHECKABLE or not response.is_success:
        return
    body = _json(response)
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        return
    served = [str(entry.get("id")) for entry in data if isinstance(entry, dict)]
    if not served or model in served:
        return
    listed = ", ".join(served[:8]) + (", ..." if len(served) > 8 else "")
    raise PreflightError(f"{name}: {shown} does not serve model {model!r} (it serves: {listed})")
