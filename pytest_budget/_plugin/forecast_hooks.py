"""A live run's cost forecast: its rows, built by each suite from its own prompts.

Called once on the xdist controller (or the only process) before any model call
(:mod:`pytest_budget._run.forecast` says how the figures are made).  Every request is built with
the suite's and the agent's own functions, so the prompts counted are the prompts sent.
Each suite adds its rows from its ``pytest_budget_forecast`` hook (its ``*_forecast``
fixture module says what it counts).

Only model agents of the run (``provider:model``, behind the run's runtime) are forecast;
Python agents cost nothing here.  Each repeat (``--budget-repeat``) of a model agent is
calls of its own (the recording keys a call by its repeat index too), so the calls of a
role the suite repeats are counted once per repeat, less those already recorded for it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pytest_budget._run.forecast import Forecast, RoleForecast, prompt_tokens

if TYPE_CHECKING:
    import pytest

    from pytest_budget._run.session import BudgetSession

__all__ = [
    "ForecastRows",
    "agent_names",
    "build_forecast",
    "forecast_after_run",
    "forecast_before_run",
    "forecast_report",
    "model_of",
    "role_agent",
]


def model_of(agent: object) -> Any:
    """The runtime-wrapped chat model behind an LLM agent, or None (a Python agent)."""
    from pytest_budget.models._llm_agent import LLMAgent
    from pytest_budget.models._runtime import RuntimeChatModel

    if not isinstance(agent, LLMAgent) or not isinstance(agent.model, RuntimeChatModel):
        return None
    return agent.model


def _recorded(
    agent: Any,
    messages: Sequence[Mapping[str, Any]] | Callable[[], Sequence[Mapping[str, Any]]],
    cap: int,
    tools: Any,
    repeat: int = 0,
) -> bool:
    """Whether this exact request of repeat ``repeat`` will be replayed (free) instead of
    sent (``messages`` may be a function building them, called only for the look-up)."""
    from pytest_budget.models._recorder import canonical_body, key_of

    model = model_of(agent)
    runtime = model.runtime
    mode = runtime.config.mode_for(model.provider, model.model)
    if mode == "none":
        return True  # replay only: nothing is sent (a missing recording is an error)
    if mode != "new" or runtime.recorder is None:
        return False
    if runtime.recorder.is_empty(model.provider, model.model):
        return False  # nothing to look up: the request body is not built
    if callable(messages):
        messages = messages()
    body = model.client.request_body(
        messages, max_tokens=cap, temperature=agent.temperature, tools=tools
    )
    key = key_of(model.provider, canonical_body(body), repeat)
    return runtime.recorder.load(model.provider, model.model, key, body) is not None


class ForecastRows:
    """The forecast's rows (one per suite, role and model) and its notes, as the suites'
    :func:`~pytest_budget._plugin.suite_hooks.pytest_budget_forecast` hooks fill them."""

    def __init__(self, repeat: int = 1) -> None:
        self.rows: dict[tuple[str, str, str], RoleForecast] = {}
        self.notes: list[str] = []
        self.repeat = repeat  # --budget-repeat: runs of each cell's repeated role

    def row(self, suite: str, role: str, agent: Any) -> RoleForecast:
        model = model_of(agent)
        label = f"{model.provider}:{model.model}"
        key = (suite, role, label)
        if key not in self.rows:
            self.rows[key] = RoleForecast(suite, role, label)
        return self.rows[key]

    def call(
        self,
        suite: str,
        role: str,
        agent: Any,
        messages: Sequence[Mapping[str, Any]],
        cap: int,
        tools: Any = None,
        *,
        repeated: bool = False,
    ) -> None:
        """One request; ``repeated``: the suite sends it again in every repeat."""
        row = self.row(suite, role, agent)
        for repeat in range(self.repeat if repeated else 1):
            if _recorded(agent, messages, cap, tools, repeat):
                row.recorded += 1
            else:
                row.add_call(prompt_tokens(messages, tools), cap)

    def call_counted(
        self,
        suite: str,
        role: str,
        agent: Any,
        messages: Callable[[], Sequence[Mapping[str, Any]]],
        prompt: int,
        cap: int,
        *,
        repeated: bool = False,
    ) -> None:
        """:meth:`call` for a request whose ``prompt`` tokens are already counted: the
        messages are built only when a recording must be searched for them."""
        row = self.row(suite, role, agent)
        for repeat in range(self.repeat if repeated else 1):
            if _recorded(agent, messages, cap, None, repeat):
                row.recorded += 1
            else:
                row.add_call(prompt, cap)


def agent_names(config: pytest.Config, state: BudgetSession, suite: str, role: str) -> list[str]:
    from pytest_budget._plugin.role_agents import hook_agent
    from pytest_budget._run.agent_names import USER_AGENT, default_agents

    options = state.options
    if options.agents_explicit:
        return list(options.agents)
    if hook_agent(config, role) is not None:
        return [USER_AGENT]
    return list(default_agents(suite))


def role_agent(config: pytest.Config, state: BudgetSession, name: str, role: str) -> Any:
    """The agent a cell of ``name`` uses for ``role`` (None when it has none)."""
    from pytest_budget._plugin.role_agents import role_agent_for

    try:
        return role_agent_for(config, state.options, name, role, state.options.seed)
    except KeyboardInterrupt:
        raise
    except BaseException:  # no such role for this agent: the test says so itself
        return None


def build_forecast(config: pytest.Config, state: BudgetSession) -> Forecast:
    """The run's forecast (every suite it runs, every model agent in it)."""
    from pytest_budget.models._setup import price_table

    options = state.options
    rows = ForecastRows(options.repeat)
    for suite in options.suites:
        done = config.hook.pytest_budget_forecast(
            config=config, session=state, suite=suite, rows=rows
        )
        if not done:
            rows.notes.append(f"{suite}: not forecast (the suite does not forecast its calls)")
    return Forecast(list(rows.rows.values()), price_table(options), rows.notes, options.size)


def forecast_before_run(
    config: pytest.Config, state: BudgetSession, write: Callable[[str], None]
) -> None:
    """Print the forecast; then ``--budget-dry-run`` exits (status 0, no call made) and
    ``--budget-max-usd`` refuses to start when the worst case passes it (unless
    ``--budget-max-usd-mode=stop-at-cap``); without ``--budget-max-usd``, a worst case above
    ``--budget-max-usd-default`` refuses to start.  Called once, on the controller."""
    import pytest

    options = state.options
    try:
        forecast = build_forecast(config, state)
    except (KeyboardInterrupt, pytest.UsageError):
        raise
    except Exception as exc:  # never a crash: the run's own checks say what is wrong
        reason = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        write(f"no cost forecast: building it failed ({reason})")
        if options.dry_run:
            pytest.exit("budget: dry run (--budget-dry-run): no model was called", returncode=0)
        if options.max_usd is not None and options.max_usd_mode != "stop-at-cap":
            raise pytest.UsageError(
                f"--budget-max-usd: the run's cost could not be forecast ({reason}); add "
                "--budget-max-usd-mode=stop-at-cap to run until the cap is reached"
            ) from None
        return
    state.forecast = forecast
    for line in forecast.lines():
        write(line)
    from pytest_budget._core.registry import registered_suites
    from pytest_budget._stats.sequential import forecast_lines

    rows = [(r.suite, r.role, r.calls, r.calls_worst) for r in forecast.rows if r.calls_worst]
    suites = registered_suites().values()
    shares = {(s.name, role): share for s in suites for role, share in s.sequential_shares.items()}
    whole = {(s.name, role): why for s in suites for role, why in s.runs_whole.items()}
    for line in forecast_lines(rows, options.sequential, shares, whole):
        write(line)
    if options.dry_run:
        pytest.exit("budget: dry run (--budget-dry-run): no model was called", returncode=0)
    expected, worst = forecast.usd()
    cap = options.max_usd
    if cap is None:
        limit = options.max_usd_default
        if worst is not None and worst > limit:
            raise pytest.UsageError(
                f"the forecast's worst case is ${worst:,.2f} (expected ${expected or 0:,.2f}, "
                f"{forecast.totals()['calls']:,} calls), above the default limit ${limit:,.2f} "
                "for a run without --budget-max-usd, so the run did not start; give "
                "--budget-max-usd=USD (or raise --budget-max-usd-default / ini "
                "budget_max_usd_default), or narrow the run"
            )
        return
    if options.max_usd_mode == "stop-at-cap" or worst is None or worst <= cap:
        return
    raise pytest.UsageError(
        f"--budget-max-usd={cap:g}: the forecast's worst case is ${worst:,.4f} (expected "
        f"${expected or 0:,.4f}), so the run did not start; raise the cap, narrow the run, or "
        "add --budget-max-usd-mode=stop-at-cap to run until the cap is reached"
    )


def forecast_after_run(state: BudgetSession, ledger: Any) -> list[str]:
    """The forecast beside what the run spent (terminal lines; empty without a forecast)."""
    forecast = state.forecast
    if forecast is None or ledger is None:
        return []
    spent = None if ledger.count("unpriced") else ledger.spent_usd
    return forecast.after_run(
        spent, ledger.count("calls"), ledger.count("input_tokens"), ledger.count("output_tokens")
    )


def forecast_report(state: BudgetSession) -> dict[str, Any] | None:
    """The report's ``models.forecast`` block (None without a forecast)."""
    forecast = state.forecast
    return None if forecast is None else forecast.as_dict()
