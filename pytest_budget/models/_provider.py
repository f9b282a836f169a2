"""Chat clients and agent factories for the ``openai:`` and ``anthropic:`` agent names.

:func:`build_chat_client` makes the HTTP client for a provider and model; the API key comes
only from the environment: ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY``, or the variable named
by ``api_key_env`` (``--budget-api-key-env``), never from an argument or a file.  The hosted
APIs need a key and a missing one is a one-line :class:`ProviderConfigError`; any other
``base_url`` (a local server) may run without one.

:func:`pytest_budget._run.model_agents.provider_factory` builds the LLM agents of a provider on
these clients (the ``factory(model, role, settings)`` that
:func:`pytest_budget._run.agent_names.register_provider` expects); nothing is registered here.

Connections are kept alive on the process's worker loop (:mod:`pytest_budget.models._loop`),
where the suites run every cell: one ``httpx`` pool serves them all.  An ``httpx``
connection pooled in one loop breaks in the next ("Event loop is closed"), so a call made
on any other loop (an async test's own) opens a fresh connection.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import httpx

from pytest_budget.models._client import (
    DEFAULT_TIMEOUT,
    AnthropicChatClient,
    ChatClient,
    OpenAIChatClient,
)

__all__ = [
    "BASE_URL_ENVS",
    "DEFAULT_API_KEY_ENVS",
    "DEFAULT_BASE_URLS",
    "PROVIDERS",
    "ProviderConfigError",
    "build_chat_client",
    "check_provider",
    "check_provider_config",
    "endpoint_settings",
    "gateway_headers",
    "key_required",
    "parse_header_env",
]

PROVIDERS: tuple[str, ...] = ("openai", "anthropic")

DEFAULT_BASE_URLS: dict[str, str] = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
}

DEFAULT_API_KEY_ENVS: dict[str, str] = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
}

_CLIENTS: dict[str, type[ChatClient]] = {
    "openai": OpenAIChatClient,
    "anthropic": AnthropicChatClient,
}

# Hosts that always need a key.
_HOSTED = frozenset(urlsplit(url).hostname for url in DEFAULT_BASE_URLS.values())
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")

ProviderFactory = Callable[[str, str, Mapping[str, Any]], object]


class ProviderConfigError(ValueError):
    """A provider cannot be set up (unknown provider, missing key, bad variable name).

    The message is one line and never holds a key.
    """


def check_provider(provider: str) -> None:
    """Raise :class:`ProviderConfigError` unless ``provider`` is one of :data:`PROVIDERS`."""
    if provider not in PROVIDERS:
        raise ProviderConfigError(
            f"unknown model provider {provider!r}; providers: {', '.join(PROVIDERS)}"
        )


def key_required(base_url: str) -> bool:
    """Whether calls to ``base_url`` need an API key: true for the hosted OpenAI/Anthropic APIs."""
    return urlsplit(base_url).hostname in _HOSTED


#: Read when ``--budget-base-url`` is absent, as the providers' own SDKs do.
BASE_URL_ENVS: dict[str, str] = {
    "openai": "OPENAI_BASE_URL",
    "anthropic": "ANTHROPIC_BASE_URL",
}


def _base_url(provider: str, base_url: str | None) -> str:
    if not base_url:
        base_url = os.environ.get(BASE_URL_ENVS[provider], "").strip() or None
    if not base_url:
        return DEFAULT_BASE_URLS[provider]
    url = base_url.strip().rstrip("/")
    if provider == "anthropic" and url.endswith("/v1"):
        # One --budget-base-url serves both providers; the Anthropic client adds /v1 itself.
        url = url[: -len("/v1")]
    return url


def _api_key(
    provider: str, model: str, base_url: str, api_key_env: str | None, required: bool = True
) -> str | None:
    if api_key_env is not None and not _ENV_NAME.fullmatch(api_key_env):
        # Never echo the value: a key pasted here by mistake must not reach a report.
        raise ProviderConfigError(
            f"{provider}:{model}: api_key_env must name an environment variable (letters, "
            "digits and underscores), not hold the key itself"
        )
    variable = api_key_env or DEFAULT_API_KEY_ENVS[provider]
    key = os.environ.get(variable, "").strip()
    if key:
        return key
    if required and (api_key_env is not None or key_required(base_url)):
        host = urlsplit(base_url).hostname or "the base URL"
        raise ProviderConfigError(
            f"{provider}:{model}: no API key for {host}: the environment variable "
            f"{variable} is not set (export it, or name another variable with "
            "--budget-api-key-env)"
        )
    return None  # a local server that takes no key


_HEADER_NAME = re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~-]+")


def parse_header_env(spec: str) -> tuple[str, str]:
    """``NAME=ENV_VAR`` (``--budget-model-header``) as (header name, variable name)."""
    name, sep, variable = (part.strip() for part in spec.partition("="))
    if not sep or not _HEADER_NAME.fullmatch(name) or not _ENV_NAME.fullmatch(variable):
        raise ProviderConfigError(
            "--budget-model-header: expected HEADER=ENV_VAR (a header name and the environment "
            "variable holding its value, e.g. X-Gateway-Token=GATEWAY_TOKEN); values are only "
            "ever read from the environment"
        )
    return name, variable


def gateway_headers(header_envs: Sequence[str] = ()) -> dict[str, str]:
    """Extra request headers from ``NAME=ENV_VAR`` specs, values read from the environment
    (a missing or empty variable is a :class:`ProviderConfigError` naming it, never a value)."""
    headers: dict[str, str] = {}
    for spec in header_envs:
        name, variable = parse_header_env(spec)
        value = os.environ.get(variable, "").strip()
        if not value:
            raise ProviderConfigError(
                f"--budget-model-header {name}: the environment variable {variable} is not set "
                "(export it, or drop the option)"
            )
        headers[name] = value
    return headers


def check_provider_config(
    provider: str,
    model: str,
    base_url: str | None,
    api_key_env: str | None,
    header_envs: Sequence[str] = (),
    need_key: bool = True,
) -> None:
    """What :func:`build_chat_client` would reject (bad provider/URL, missing key or header
    variable), without opening anything: the plugin calls it before a run starts.  A dry
    run (``need_key=False``) sends nothing, so it needs no key."""
    check_provider(provider)
    if not model:
        raise ProviderConfigError(f"{provider}: no model name given, e.g. {provider}:MODEL")
    _api_key(provider, model, _base_url(provider, base_url), api_key_env, need_key)
    gateway_headers(header_envs)


def endpoint_settings(
    provider: str, model: str, base_url: str | None, api_key_env: str | None
) -> tuple[str, str | None]:
    """The base URL a client for ``provider:model`` would use, and its key (or None).

    For callers that talk to the endpoint outside a chat call (the preflight check); the key
    must only ever go into a request header.
    """
    check_provider(provider)
    url = _base_url(provider, base_url)
    return url, _api_key(provider, model, url, api_key_env)


def build_chat_client(
    provider: str,
    model: str,
    *,
    base_url: str | None = None,
    api_key_env: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    keep_alive: bool = False,
    header_envs: Sequence[str] = (),
    need_key: bool = True,
) -> ChatClient:
    """The chat client for ``provider`` (``openai`` or ``anthropic``) and ``model``.

    ``base_url`` defaults to the environment variable of :data:`BASE_URL_ENVS`
    (``OPENAI_BASE_URL``, ``ANTHROPIC_BASE_URL``), else the provider's hosted API
    (:data:`DEFAULT_BASE_URLS`); for
    Anthropic a trailing ``/v1`` is dropped (the client adds it).  The key is read from the
    environment variable ``api_key_env`` (default :data:`DEFAULT_API_KEY_ENVS`); it is
    required for the hosted APIs and whenever ``api_key_env`` is named, optional otherwise.
    ``keep_alive=False`` (default) shares the worker loop's pool there and opens a
    connection per call on other loops, so the client works across event loops; ``True``
    pools connections in the client itself (one event loop only; close the client).
    ``header_envs`` are ``NAME=ENV_VAR`` extra headers (:func:`gateway_headers`).
    Credentials in ``base_url`` (``https://user:pass@host/v1``) are sent as Basic
    authorization and appear nowhere else.  ``need_key=False`` (a dry run, which only builds
    requests) accepts a missing key.  Raises :class:`ProviderConfigError`.
    """
    check_provider(provider)
    if not model:
        raise ProviderConfigError(f"{provider}: the model name is empty (use {provider}:MODEL)")
    url = _base_url(provider, base_url)
    key = _api_key(provider, model, url, api_key_env, need_key)
    return _CLIENTS[provider](
        model,
        url,
        key,
        timeout=timeout,
        http_limits=None if keep_alive else httpx.Limits(max_keepalive_connections=0),
        use_shared_pool=True,
        extra_headers=gateway_headers(header_envs),
    )
