"""The plugin's model set-up: ``provider:model`` agents, the per-run model runtime (record
and replay, retries, prices, the spend ledger) on the controller and the xdist workers, and
the preflight call that checks an endpoint before any cell runs.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_budget._run.options import BudgetOptions

if TYPE_CHECKING:
    from pytest_budget._run.session import BudgetSession

__all__ = [
    "RUNTIME_PAYLOAD_KEY",
    "check_model_agents",
    "is_worker",
    "preflight",
    "register_model_providers",
    "set_up_model_runtime",
]


def is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def register_model_providers() -> None:
    """``openai:MODEL`` and ``anthropic:MODEL`` agents (before options are validated)."""
    from pytest_budget._run.agent_names import register_provider

    for provider in _MODEL_PROVIDERS:
        register_provider(provider, _lazy_provider_factory(provider))


#: The model providers (``models.provider.PROVIDERS``, which imports the HTTP stack: it is
#: loaded only when a run names a model agent; a test checks the two lists agree).
_MODEL_PROVIDERS = ("openai", "anthropic")


def _lazy_provider_factory(provider: str) -> Any:
    def factory(model: str, role: str, settings: dict[str, Any]) -> Any:
        from pytest_budget._run.model_agents import provider_factory

        return provider_factory(provider)(model, role, settings)

    return factory


def _names_model_agent(options: BudgetOptions) -> bool:
    """Whether any agent name of the run could be a model agent (reference agent names
    have no ``:`` or ``/``); the model machinery is imported only then."""
    names = (*options.agents, *options.role_agents.values())
    return any(":" in name or "/" in name for name in names)


def check_model_agents(options: BudgetOptions) -> None:
    """Build every named model agent's client once: a missing key or a bad URL is a usage
    error before anything runs (no network traffic here).  A dry run needs no key."""
    if not _names_model_agent(options):
        return
    from pytest_budget.models._provider import PROVIDERS, ProviderConfigError, check_provider_config

    names = [*options.agents, *options.role_agents.values()]
    for name in names:
        provider, sep, model = name.partition(":")
        if not sep or provider not in PROVIDERS:
            continue
        try:
            check_provider_config(
                provider,
                model,
                options.base_url,
                options.api_key_env,
                options.model_headers,
                need_key=not options.dry_run,
            )
        except (ProviderConfigError, ValueError) as exc:
            raise pytest.UsageError(f"--budget-agent={name}: {exc}") from None


RUNTIME_PAYLOAD_KEY = "budget_model_runtime"


def _pytest_cache_root(config: pytest.Config) -> Path:
    """Where pytest's cache plugin keeps plugin data (``<cache_dir>/d/pytest_budget``)."""
    try:
        value = str(config.getini("cache_dir") or ".pytest_cache")
    except ValueError:  # -p no:cacheprovider: the ini key is not registered
        value = ".pytest_cache"
    root = Path(value).expanduser()
    if not root.is_absolute():
        root = config.rootpath / root
    return root / "d" / "pytest_budget"


def set_up_model_runtime(config: pytest.Config, session: BudgetSession) -> None:
    """Give the run's model agents their runtime (record/replay, retries, spend cap).

    The controller decides the settings, checks prices and the endpoints up front, and
    hands the settings to xdist workers through ``workerinput``.
    """
    if not _names_model_agent(session.options):
        return
    from pytest_budget.models._runtime import ModelRuntime
    from pytest_budget.models._setup import (
        config_from_payload,
        model_agents,
        new_runtime_config,
        price_table,
        unpriced_models,
    )

    options = session.options
    agents = model_agents(options)
    if not agents:
        return
    if is_worker(config):
        payload = config.workerinput.get(RUNTIME_PAYLOAD_KEY)  # type: ignore[attr-defined]
        if payload is None:
            return
        from dataclasses import replace

        # Workers share the run: the same request is sent by one of them only.
        runtime_config = replace(config_from_payload(json.loads(payload)), claim_files=True)
    else:
        table = price_table(options)
        missing = unpriced_models(options, table)
        if options.max_usd is not None and missing:
            raise pytest.UsageError(
                f"--budget-max-usd: no price for {', '.join(missing)}; add a line "
                "'MODEL = INPUT_USD OUTPUT_USD' (per million tokens) to ini budget_prices or "
                "--budget-price-file"
            )
        cache_root = options.cache_dir or str(_pytest_cache_root(config))
        runtime_config = new_runtime_config(
            options, cache_root=cache_root, run_id=f"{os.getpid()}-{os.urandom(6).hex()}"
        )
        if options.suites:
            # After the cost forecast (pytest_sessionstart): a dry run sends nothing at all.
            session.preflight = (agents, runtime_config)
    session.model_runtime_config = runtime_config
    session.model_runtime = ModelRuntime(runtime_config, price_table(options))
    if is_worker(config):  # Ctrl-C: the worker stops at once (pytest_budget._plugin.interrupt)
        from pytest_budget._plugin.interrupt import WorkerInterrupt

        config.pluginmanager.register(WorkerInterrupt(session), "budget-worker-interrupt")


def preflight(options: BudgetOptions, agents: list[tuple[str, str]], runtime_config: Any) -> None:
    """One free request per endpoint before any call is paid for (skipped when every
    model's calls will be replayed)."""
    from pytest_budget.models._preflight import PreflightError, preflight
    from pytest_budget.models._provider import ProviderConfigError

    for provider, model in agents:
        if runtime_config.mode_for(provider, model) == "none":
            continue
        try:
            preflight(
                provider,
                model,
                base_url=options.base_url,
                api_key_env=options.api_key_env,
                header_envs=options.model_headers,
            )
        except (PreflightError, ProviderConfigError) as exc:
            raise pytest.UsageError(f"--budget-agent={provider}:{model}: {exc}") from None
