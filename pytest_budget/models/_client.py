"""Async chat clients over plain HTTP (httpx): OpenAI Chat Completions and Anthropic Messages.

No vendor SDK: each client builds the provider's JSON request, posts it with
``httpx.AsyncClient`` and parses the answer into one :class:`ChatResult`.  There are no
retries here; a failed call raises :class:`ModelCallError` once (the runtime in
:mod:`pytest_budget.models._runtime` retries the transient ones).

Messages are provider-style dicts (``{"role": "user", "content": "..."}``).  The OpenAI client
sends them as they are; the Anthropic client moves ``system`` messages into the top-level
``system`` field and sends the rest as they are.  Tools are given once, provider-neutral, as
:class:`ToolSpec` and mapped to each provider's format.

API keys are passed in (callers read them from an environment variable).  A key is sent only in
the request header; it never appears in a ``repr``, an exception message or a log line, and
any echo of it in an error body is masked.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any, ClassVar

import anyio
import httpx

from pytest_budget._core.redact import redact_text, split_credentials
from pytest_budget.models._chat_types import ChatResult, ToolCall, ToolSpec
from pytest_budget.models._loop import shared_http_client
from pytest_budget.models._usage import from_anthropic, from_openai

__all__ = [
    "ANTHROPIC_VERSION",
    "AnthropicChatClient",
    "ChatClient",
    "ChatResult",
    "ModelCallError",
    "OpenAIChatClient",
    "ToolCall",
    "ToolSpec",
]

ANTHROPIC_VERSION = "2023-06-01"
"""Value of the ``anthropic-version`` header."""

DEFAULT_TIMEOUT = 60.0
"""Seconds a call may take in all (connect, send, the whole answer), and for each of
httpx's connect, read, write and pool waits."""

_REASON_LIMIT = 200
_MASK = "***"


class ModelCallError(Exception):
    """A model call failed: HTTP error status, transport failure or unusable response.

    ``status`` is the HTTP status (None when no response arrived), ``reason`` a short,
    key-free explanation (an error body is truncated), ``retry_after`` the raw
    ``Retry-After`` header and ``retry_after_ms`` the raw ``retry-after-ms`` header if the
    server sent them.  ``kind`` says what went wrong: ``"http"`` (an error status),
    ``"timeout"``, ``"transport"`` (refused or dropped connection), ``"malformed"`` (a 2xx
    answer whose body is not a JSON object, e.g. truncated), ``"unusable"`` (valid JSON
    without what the provider's format needs), or, from the runtime, ``"not_recorded"``
    (replay-only mode without a recording) and ``"spend_cap"`` (``--budget-max-usd`` reached).
    """

    def __init__(
        self,
        provider: str,
        model: str,
        reason: str,
        *,
        status: int | None = None,
        retry_after: str | None = None,
        retry_after_ms: str | None = None,
        kind: str = "http",
    ) -> None:
        self.provider = provider
        self.model = model
        self.reason = reason
        self.status = status
        self.retry_after = retry_after
        self.retry_after_ms = retry_after_ms
        self.kind = kind
        where = f"{provider}:{model}"
        if status is not None:
            where = f"{where}: HTTP {status}"
        super().__init__(f"{where}: {reason}")


class _Secret:
    """Holds an API key; its repr and str never show it."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return repr(_MASK)

    __str__ = __repr__


def _mask(text: str, secrets: Sequence[_Secret]) -> str:
    """``text`` with URL user info and every secret value masked."""
    return redact_text(text, (secret.reveal() for secret in secrets))


def _truncate(text: str, limit: int = _REASON_LIMIT) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _error_reason(response: httpx.Response) -> str:
    """The provider's error message if the body is the usual JSON, else the body's text."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, Mapping):
        error = body.get("error")
        if isinstance(error, Mapping) and isinstance(error.get("message"), str):
            return str(error["message"])
        if isinstance(error, str):
            return error
        if isinstance(body.get("message"), str):
            return str(body["message"])
    text = response.text.strip()
    return text or response.reason_phrase or "no body"


def _parse_arguments(raw: str) -> dict[str, Any] | None:
    try:
        value = json.loads(raw) if raw.strip() else {}
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


class ChatClient:
    """Base of the HTTP chat clients: one async :meth:`complete` call per model turn.

    Use as ``async with Client(...) as client:`` or call :meth:`aclose`; an
    ``httpx.AsyncClient`` passed in as ``http_client`` is used as is and left open.

    On the process's worker loop (:mod:`pytest_budget.models._loop`) the calls share that
    loop's pooled keep-alive connections when ``use_shared_pool`` is true (the default when
    no ``http_client`` is given); otherwise they go through ``http_client``.
    """

    provider: ClassVar[str] = "chat"

    def __init__(
        self,
        model: str,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        http_client: httpx.AsyncClient | None = None,
        use_shared_pool: bool | None = None,
        extra_headers: Mapping[str, str] | None = None,
        http_limits: httpx.Limits | None = None,
    ) -> None:
        if not model:
            raise ValueError("model must be a non-empty string")
        if not base_url:
            raise ValueError("base_url must be a non-empty string")
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout!r}")
        self.model = model
        # Credentials in the URL (https://user:pass@host/v1) travel only as a Basic
        # authorization header; the URL kept, shown and used for requests has none.
        clean_url, credentials = split_credentials(base_url)
        self.base_url = clean_url.rstrip("/")
        self.timeout = float(timeout)
        self._key = _Secret(api_key) if api_key else None
        self._basic: _Secret | None = None
        self._extra = {name: _Secret(value) for name, value in (extra_headers or {}).items()}
        secrets = [self._key, *self._extra.values()]
        if credentials is not None:
            user, password = credentials
            token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
            self._basic = _Secret(f"Basic {token}")
            secrets += [_Secret(password), _Secret(f"{user}:{password}"), _Secret(token)]
        self._secrets = [secret for secret in secrets if secret is not None]
        self._owns_http = http_client is None
        # Made on first use off the worker loop's pool: an httpx client builds an SSL
        # context (~10 ms of CPU), and a run builds an agent per cell.
        self._own_http: httpx.AsyncClient | None = http_client
        self._http_limits = http_limits
        if use_shared_pool is None:
            use_shared_pool = http_client is None
        self._use_pool = use_shared_pool
        self._fixed: tuple[httpx.URL, httpx.Timeout] | None = None

    @property
    def _http(self) -> httpx.AsyncClient:
        """The client's own ``httpx.AsyncClient`` (the one passed in, else made now)."""
        if self._own_http is None:
            limits = self._http_limits
            self._own_http = (
                httpx.AsyncClient() if limits is None else httpx.AsyncClient(limits=limits)
            )
        return self._own_http

    def __repr__(self) -> str:
        key = _MASK if self._key is not None else None
        return (
            f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r}, "
            f"api_key={key!r})"
        )

    async def __aenter__(self) -> ChatClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._owns_http and self._own_http is not None:
            await self._own_http.aclose()

    # -- provider hooks -------------------------------------------------------------------
    @property
    def endpoint(self) -> str:
        raise NotImplementedError

    def _headers(self) -> dict[str, str]:
        raise NotImplementedError

    def _with_gateway_headers(self, headers: dict[str, str]) -> dict[str, str]:
        """The URL's Basic credentials (unless the key already fills ``authorization``) and
        the extra headers (``--budget-model-header``), which win over the others."""
        if self._basic is not None and "authorization" not in headers:
            headers["authorization"] = self._basic.reveal()
        for name, value in self._extra.items():
            headers[name.lower()] = value.reveal()
        return headers

    def build_request(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        max_tokens: int,
        temperature: float = 0.0,
        tools: Sequence[ToolSpec] | None = None,
    ) -> dict[str, Any]:
        """The JSON body :meth:`complete` would post (no headers, so nothing secret)."""
        raise NotImplementedError

    def parse_response(self, body: Mapping[str, Any]) -> ChatResult:
        """Turn a provider's JSON answer into a :class:`ChatResult` (ValueError if unusable)."""
        raise NotImplementedError

    # -- the call --------------------------------------------------------------------------
    async def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        max_tokens: int,
        temperature: float = 0.0,
        tools: Sequence[ToolSpec] | None = None,
    ) -> ChatResult:
        """Make one call; raises :class:`ModelCallError` on any failure (no retries)."""
        payload = self.request_body(
            messages, max_tokens=max_tokens, temperature=temperature, tools=tools
        )
        return await self.send(payload)

    def request_body(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        max_tokens: int,
        temperature: float = 0.0,
        tools: Sequence[ToolSpec] | None = None,
    ) -> dict[str, Any]:
        """:meth:`build_request` after checking ``max_tokens`` (ValueError when it is bad)."""
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise ValueError(f"max_tokens must be a positive integer, got {max_tokens!r}")
        return self.build_request(
            messages, max_tokens=max_tokens, temperature=temperature, tools=tools
        )

    async def send(self, body: Mapping[str, Any], content: bytes | None = None) -> ChatResult:
        """Post a body made by :meth:`request_body` and parse the answer (no retries).

        ``content`` is the body's JSON encoding when the caller has made it already (the
        runtime hashes that encoding for the recordings); otherwise it is encoded here.
        """
        if content is None:
            content = json.dumps(
                body, ensure_ascii=False, separators=(",", ":"), allow_nan=False
            ).encode()
        try:
            # A total deadline for the whole answer: httpx's own timeout is per read, so a
            # server trickling a byte every few seconds would otherwise never time out.
            with anyio.fail_after(self.timeout):
                response = await self._send(content)
        except (httpx.TimeoutException, TimeoutError):
            raise self._error(
                f"timed out after {self.timeout:g} s (a total deadline for the whole answer)",
                kind="timeout",
            ) from None
        except httpx.HTTPError as exc:
            detail = _truncate(_mask(str(exc), self._secrets)) or "no detail"
            raise self._error(f"{type(exc).__name__}: {detail}", kind="transport") from None
        if not response.is_success:
            reason = _truncate(_mask(_error_reason(response), self._secrets))
            raise self._error(
                reason,
                status=response.status_code,
                retry_after=response.headers.get("retry-after"),
                retry_after_ms=response.headers.get("retry-after-ms"),
            )
        try:
            body = response.json()
        except ValueError:
            snippet = _truncate(_mask(response.text, self._secrets), 80)
            raise self._error(
                f"response is not JSON: {snippet!r}", status=response.status_code, kind="malformed"
            ) from None
        if not isinstance(body, Mapping):
            raise self._error(
                "response is not a JSON object", status=response.status_code, kind="malformed"
            )
        try:
            return self.parse_response(body)
        except ValueError as exc:
            reason = _truncate(_mask(f"malformed response: {exc}", self._secrets))
            raise self._error(reason, status=response.status_code, kind="unusable") from None

    async def _send(self, content: bytes) -> httpx.Response:
        http = shared_http_client() if self._use_pool else None
        fixed = self._fixed
        if fixed is None:
            # The same for every call: parsed and built once.
            fixed = self._fixed = (httpx.URL(self.endpoint), httpx.Timeout(self.timeout))
        url, timeout = fixed
        return await (http or self._http).post(
            url, content=content, headers=self._headers(), timeout=timeout
        )

    def _error(
        self,
        reason: str,
        *,
        status: int | None = None,
        retry_after: str | None = None,
        retry_after_ms: str | None = None,
        kind: str = "http",
    ) -> ModelCallError:
        return ModelCallError(
            self.provider,
            self.model,
            reason,
            status=status,
            retry_after=retry_after,
            retry_after_ms=retry_after_ms,
            kind=kind,
        )


class OpenAIChatClient(ChatClient):
    """Chat Completions (``POST {base_url}/chat/completions``) on any OpenAI-compatible server.

    ``base_url`` includes the version prefix, e.g. ``http://127.0.0.1:8000/v1``.  The cap is
    sent as ``max_tokens`` (many local servers ignore ``max_completion_tokens``).
    """

    provider: ClassVar[str] = "openai"

    @property
    def endpoint(self) -> str:
        return f"{self.base_url}/chat/completions"

    def _headers(self) -> dict[str, str]:
        headers = {"content-type": "application/json"}
        if self._key is not None:
            headers["authorization"] = f"Bearer {self._key.reveal()}"
        return self._with_gateway_headers(headers)

    def build_request(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        max_tokens: int,
        temperature: float = 0.0,
        tools: Sequence[ToolSpec] | None = None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(m) for m in messages],
            "max_tokens": max_tokens,
            "temperature": temperature,
        }
        if tools:
            body["tools"] = [tool.to_openai() for tool in tools]
            # CostBench's request (fact sheet 4.3): one tool call per turn, asked for.
            body["tool_choice"] = "auto"
            body["parallel_tool_calls"] = False
        return body

    def parse_response(self, body: Mapping[str, Any]) -> ChatResult:
        choices = body.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
            raise ValueError("no choices")
        choice = choices[0]
        message = choice.get("message")
        if not isinstance(message, Mapping):
            raise ValueError("choice has no message")
        content = message.get("content")
        text = content if isinstance(content, str) else ""
        calls: list[ToolCall] = []
        for index, item in enumerate(message.get("tool_calls") or ()):
            function = item.get("function") if isinstance(item, Mapping) else None
            if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
                raise ValueError(f"tool call {index} has no function name")
            raw = function.get("arguments")
            raw_text = raw if isinstance(raw, str) else json.dumps(raw)
            call_id = item.get("id")
            calls.append(
                ToolCall(
                    id=call_id if isinstance(call_id, str) else f"call_{index}",
                    name=function["name"],
                    arguments=_parse_arguments(raw_text),
                    raw_arguments=raw_text,
                )
            )
        finish = choice.get("finish_reason")
        return ChatResult(
            text=text,
            tool_calls=tuple(calls),
            usage=from_openai(body.get("usage")),
            raw_finish_reason=finish if isinstance(finish, str) else None,
        )


class AnthropicChatClient(ChatClient):
    """Anthropic Messages API (``POST {base_url}/v1/messages``).

    ``system`` messages are joined (blank line between) into the top-level ``system`` field;
    the key goes in ``x-api-key``, with ``anthropic-version`` set to :data:`ANTHROPIC_VERSION`.
    """

    provider: ClassVar[str] = "anthropic"

    def __init__(
        self,
        model: str,
        base_url: str = "https://api.anthropic.com",
        api_key: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        http_client: httpx.AsyncClient | None = None,
        use_shared_pool: bool | None = None,
        extra_headers: Mapping[str, str] | None = None,
        http_limits: httpx.Limits | None = None,
    ) -> None:
        super().__init__(
            model,
            base_url,
            api_key,
            timeout=timeout,
            http_client=http_client,
            use_shared_pool=use_shared_pool,
            extra_headers=extra_headers,
            http_limits=http_limits,
        )

    @property
    def endpoint(self) -> str:
        return f"{self.base_url}/v1/messages"

    def _headers(self) -> dict[str, str]:
        headers = {"content-type": "application/json", "anthropic-version": ANTHROPIC_VERSION}
        if self._key is not None:
            headers["x-api-key"] = self._key.reveal()
        return self._with_gateway_headers(headers)

    def build_request(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        max_tokens: int,
        temperature: float = 0.0,
        tools: Sequence[ToolSpec] | None = None,
    ) -> dict[str, Any]:
        system: list[str] = []
        rest: list[dict[str, Any]] = []
        for message in messages:
            if message.get("role") == "system":
                content = message.get("content")
                if not isinstance(content, str):
                    raise ValueError("system message content must be a string")
                system.append(content)
            else:
                rest.append(dict(message))
        body: dict[str, Any] = {
            "model": self.model,
            "messages": rest,
            "max_tokens": max_tokens,
            "temperature": temperature,
        }
        if system:
            body["system"] = "\n\n".join(system)
        if tools:
            body["tools"] = [tool.to_anthropic() for tool in tools]
            # Anthropic's form of CostBench's parallel_tool_calls=False (fact sheet 4.3).
            body["tool_choice"] = {"type": "auto", "disable_parallel_tool_use": True}
        return body

    def parse_response(self, body: Mapping[str, Any]) -> ChatResult:
        content = body.get("content")
        if not isinstance(content, list):
            raise ValueError("no content list")
        texts: list[str] = []
        calls: list[ToolCall] = []
        for index, block in enumerate(content):
            if not isinstance(block, Mapping):
                raise ValueError(f"content block {index} is not an object")
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str):
                texts.append(block["text"])
            elif kind == "tool_use":
                name = block.get("name")
                if not isinstance(name, str):
                    raise ValueError(f"tool_use block {index} has no name")
                args = block.get("input")
                call_id = block.get("id")
                calls.append(
                    ToolCall(
                        id=call_id if isinstance(call_id, str) else f"toolu_{index}",
                        name=name,
                        arguments=dict(args) if isinstance(args, Mapping) else None,
                        raw_arguments=json.dumps(args),
                    )
                )
        stop = body.get("stop_reason")
        return ChatResult(
            text="".join(texts),
            tool_calls=tuple(calls),
            usage=from_anthropic(body.get("usage")),
            raw_finish_reason=stop if isinstance(stop, str) else None,
        )
