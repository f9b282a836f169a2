"""The rows of a live run's cost forecast, built from the suites' own prompts.

Called once on the xdist controller (or the only process) before any model call
(:mod:`pytest_budget.forecast` says how the figures are made).  Every request is built with
the suite's and the agent's own functions, so the prompts counted are the prompts sent:

* **triage**: Phase 0 (one solver call per pool item without a baseline, once per solver
  across pools and cells) and one planner call per cell (its prompt needs the Phase 0
  costs: when they are not known yet, the budget figure in it is estimated);
* **awareness** (rollout-replay): one estimator call per probe of the cell's rollouts,
  generated here with the reference actor (as the test would, and cached for it);
* **planning**: one multi-turn episode per query and scenario (the first prompt is the
  suite's system message, the query and the tool list; turns are assumed, see
  :mod:`pytest_budget.forecast`).

Only model agents of the run (``provider:model``, behind the run's runtime) are forecast;
Python agents cost nothing here.  Repeats (``--budget-repeat``) of a model agent send the
same requests again and are answered from the recording, so they add no calls.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pytest_budget.forecast import Forecast, RoleForecast, prompt_tokens

if TYPE_CHECKING:
    import pytest

    from pytest_budget.session import BudgetSession

__all__ = [
    "FORECAST_KEY",
    "build_forecast",
    "forecast_after_run",
    "forecast_before_run",
    "forecast_report",
]


def _model_of(agent: object) -> Any:
    """The runtime-wrapped chat model behind an LLM agent, or None (a Python agent)."""
    from pytest_budget.models.agents import LLMAgent
    from pytest_budget.models.runtime import RuntimeChatModel

    if not isinstance(agent, LLMAgent) or not isinstance(agent.model, RuntimeChatModel):
        return None
    return agent.model


def _recorded(agent: Any, messages: Sequence[Mapping[str, Any]], cap: int, tools: Any) -> bool:
    """Whether this exact request will be replayed (free) instead of sent."""
    from pytest_budget.models.recorder import canonical_body, key_of

    model = _model_of(agent)
    runtime = model.runtime
    mode = runtime.config.mode_for(model.provider, model.model)
    if mode == "none":
        return True  # replay only: nothing is sent (a missing recording is an error)
    if mode != "new" or runtime.recorder is None:
        return False
    body = model.client.request_body(
        messages, max_tokens=cap, temperature=agent.temperature, tools=tools
    )
    key = key_of(model.provider, canonical_body(body))
    return runtime.recorder.load(model.provider, model.model, key, body) is not None


class _Rows:
    def __init__(self) -> None:
        self.rows: dict[tuple[str, str, str], RoleForecast] = {}
        self.notes: list[str] = []

    def row(self, suite: str, role: str, agent: Any) -> RoleForecast:
        model = _model_of(agent)
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
    ) -> None:
        row = self.row(suite, role, agent)
        if _recorded(agent, messages, cap, tools):
            row.recorded += 1
        else:
            row.add_call(prompt_tokens(messages, tools), cap)


def _agent_names(config: pytest.Config, state: BudgetSession, suite: str, role: str) -> list[str]:
    from pytest_budget.agents import USER_AGENT, default_agents
    from pytest_budget.fixtures.core import hook_agent

    options = state.options
    if options.agents_explicit:
        return list(options.agents)
    if hook_agent(config, role) is not None:
        return [USER_AGENT]
    return list(default_agents(suite))


def _agent(config: pytest.Config, state: BudgetSession, name: str, role: str) -> Any:
    """The agent a cell of ``name`` uses for ``role`` (None when it has none)."""
    from pytest_budget.fixtures.core import role_agent_for

    try:
        return role_agent_for(config, state.options, name, role, state.options.seed)
    except KeyboardInterrupt:
        raise
    except BaseException:  # no such role for this agent: the test says so itself
        return None


def _triage(config: pytest.Config, state: BudgetSession, rows: _Rows) -> None:
    from pytest_budget.fixtures.triage import ground_truth_for, triage_cells
    from pytest_budget.forecast import EXPECTED_OUTPUT_TOKENS
    from pytest_budget.roles import agent_name
    from pytest_budget.triage.domains import recognise_domain
    from pytest_budget.triage.evaluate import plan_request
    from pytest_budget.triage.phase0 import _baseline, solver_identity
    from pytest_budget.triage.types import Baseline, Problem

    options = state.options
    cells = triage_cells(state)
    truth = ground_truth_for(state)
    measured: set[tuple[str, str]] = set()
    estimated = False
    for name in _agent_names(config, state, "triage", "planner"):
        planner = _agent(config, state, name, "planner")
        solver = _agent(config, state, name, "solver")
        if planner is None or solver is None:
            continue
        identity = solver_identity(solver)
        solver_name = agent_name(solver)
        for cell in cells:
            pool = truth.pool(cell.pool, cell.unsolvable_ratio)
            baselines: dict[str, Baseline] = {}
            for item in pool.items:
                if item.baseline is not None:
                    baselines[item.id] = item.baseline
                    continue
                found = truth.cache.lookup(identity, item, seed=options.seed)
                if found is not None:
                    baselines[item.id] = _baseline(item, found[0])
                    continue
                problem = Problem(id=item.id, text=item.text, value=item.value, domain=item.domain)
                cap = EXPECTED_OUTPUT_TOKENS["solver"]
                if _model_of(solver) is not None:
                    cap = solver.call_cap(problem, None)
                baselines[item.id] = Baseline(solved=True, tokens=cap)
                estimated = True
                if (solver_name, item.id) in measured or _model_of(solver) is None:
                    continue
                measured.add((solver_name, item.id))
                messages = solver.messages(problem, recognise_domain(problem))
                rows.call("triage", "solver", solver, messages, cap)
            if _model_of(planner) is None:
                continue
            request = plan_request(pool, baselines, cell.alpha, cell.variant)
            rows.call("triage", "planner", planner, planner.messages(request), planner.max_tokens)
    if estimated and any(key[1] == "planner" for key in rows.rows):
        rows.rows[next(k for k in rows.rows if k[1] == "planner")].assumptions.append(
            "the budget figure in each planner prompt depends on Phase 0 costs not measured "
            "yet: estimated (a few tokens either way)"
        )


def _awareness(config: pytest.Config, state: BudgetSession, rows: _Rows) -> None:
    from pytest_budget.fixtures.awareness import AwarenessRollouts, awareness_cells
    from pytest_budget.suites.test_awareness import LOGGED_ENVS, _probes

    options = state.options
    names = _agent_names(config, state, "awareness", "estimator")
    estimators = [(n, _agent(config, state, n, "estimator")) for n in names]
    estimators = [(n, e) for n, e in estimators if e is not None and _model_of(e) is not None]
    if not estimators:
        return
    from pytest_budget.awareness.probes import make_probes

    source = AwarenessRollouts(state)
    for cell in awareness_cells(state):
        logged = bool(options.rollouts) or cell.env in LOGGED_ENVS
        if cell.env == "search" and not logged and not options.search_url:
            rows.notes.append(
                "awareness search cells: not forecast (their rollouts need the retrieval "
                "server the run starts)"
            )
            continue
        for name, estimator in estimators:
            actor = None if logged else _agent(config, state, name, "actor")
            model_actor = actor is not None and _model_of(actor) is not None
            if model_actor:  # the reference actor's rollouts stand in for the model's
                from pytest_budget.agents import default_role_agent

                actor_used = default_role_agent("actor", options.seed)
            else:
                actor_used = actor
            try:
                rollouts = source.for_cell(cell, actor_used, options.search_url)
            except Exception as exc:  # the test reports it; the forecast says it is missing
                rows.notes.append(f"awareness {cell.env}: not forecast ({exc})")
                continue
            chosen = _probes(rollouts)
            asked = chosen if chosen is not None else [p for r in rollouts for p in make_probes(r)]
            if model_actor:
                _model_actor_cell(rows, cell.env, actor, estimator, rollouts, asked)
                continue
            for probe, _ in asked:
                rows.call(
                    "awareness", "estimator", estimator, estimator.messages(probe),
                    estimator.max_tokens,
                )  # fmt: skip


def _turn_cap(env: str) -> int | None:
    """The most turns one rollout of a built-in environment can take (None: unknown)."""
    from pytest_budget.awareness.environments import WAREHOUSE_PRESETS
    from pytest_budget.awareness.sokoban_env import SOKOBAN_PRESETS

    if env in SOKOBAN_PRESETS:
        return SOKOBAN_PRESETS[env].max_turns
    if env in WAREHOUSE_PRESETS:
        from pytest_budget.awareness.warehouse import WarehouseConfig

        return WarehouseConfig().steps
    if env == "search":
        from pytest_budget.awareness.search_env import SearchPreset

        return SearchPreset().max_turns
    return None


def _model_actor_cell(
    rows: _Rows, env: str, actor: Any, estimator: Any, rollouts: Sequence[Any], asked: Any
) -> None:
    """A model actor's cell, estimated from the reference actor's rollouts (module doc)."""
    from types import SimpleNamespace

    cap_turns = _turn_cap(env)
    worst_turns = len(rollouts) * cap_turns if cap_turns else sum(r.T for r in rollouts)
    actor_prompts: list[int] = []
    cap = actor.max_tokens
    for rollout in rollouts:
        for turn in rollout.turns:
            seen = SimpleNamespace(env=env, text=turn.observation or "")
            cap = actor.call_cap(seen)
            actor_prompts.append(prompt_tokens(actor.messages(seen)))
    row = rows.row("awareness", "actor", actor)
    row.add_estimated(actor_prompts, cap, worst_turns)
    probes = [prompt_tokens(estimator.messages(probe)) for probe, _ in asked]
    rows.row("awareness", "estimator", estimator).add_estimated(
        probes, estimator.max_tokens, worst_turns
    )
    note = (
        f"awareness {env}: the model actor's rollouts are estimated from the reference "
        f"actor's ({sum(r.T for r in rollouts):,} turns in {len(rollouts)} rollouts); worst "
        f"case every rollout runs to the {cap_turns or 'logged'}-turn cap"
    )
    rows.notes.append(note)


def _planning(config: pytest.Config, state: BudgetSession, rows: _Rows) -> None:
    from pytest_budget.fixtures.planning import PlanningQueries, planning_cells
    from pytest_budget.forecast import EXPECTED_TURNS, TOOL_RESULT_TOKENS
    from pytest_budget.planning.blocking import MAX_TOOL_STEPS
    from pytest_budget.planning.env import TravelEnv
    from pytest_budget.planning.episode import system_prompt, user_prompt

    options = state.options
    queries = PlanningQueries(state)
    tools: dict[tuple[str, int], Any] = {}
    for name in _agent_names(config, state, "planning", "tool_agent"):
        agent = _agent(config, state, name, "tool_agent")
        if agent is None or _model_of(agent) is None:
            continue
        row = rows.row("planning", "tool_agent", agent)
        for cell in planning_cells(state):
            level = cell.scenario.level
            for query in queries.for_task(cell.task):
                key = (cell.task, level)
                if key not in tools:
                    env = TravelEnv(
                        query.task, level, query.query_id,
                        ban_longest=options.planning_ban_longest, seed=options.seed,
                    )  # fmt: skip
                    tools[key] = env.tools
                messages = [
                    {"role": "system", "content": system_prompt(query.task, level, MAX_TOOL_STEPS)},
                    {"role": "user", "content": user_prompt(query)},
                ]
                row.add_episode(
                    prompt_tokens(messages, tools[key]), agent.max_tokens, MAX_TOOL_STEPS
                )
        if not row.assumptions:
            row.assumptions.append(
                f"multi-turn: expected {EXPECTED_TURNS['tool_agent']} turns per episode, worst "
                f"case the {MAX_TOOL_STEPS}-turn cap; each turn re-sends the conversation, "
                f"which grows by the turn's output + {TOOL_RESULT_TOKENS} tokens of tool result"
            )


_SUITES: dict[str, Callable[[Any, Any, _Rows], None]] = {
    "triage": _triage,
    "awareness": _awareness,
    "planning": _planning,
}


def build_forecast(config: pytest.Config, state: BudgetSession) -> Forecast:
    """The run's forecast (every suite it runs, every model agent in it)."""
    from pytest_budget.models.run import price_table

    options = state.options
    rows = _Rows()
    for suite in options.suites:
        if suite == "awareness" and options.awareness_mode == "online":
            rows.notes.append(
                "awareness online mode: not forecast (multi-turn rollouts of a model actor: "
                "their turns are unknown before they run); --budget-max-usd still caps the spend"
            )
            continue
        build = _SUITES.get(suite)
        if build is not None:
            build(config, state, rows)
    return Forecast(list(rows.rows.values()), price_table(options), rows.notes)


#: Key of the run's forecast in the session memo (the controller's).
FORECAST_KEY = "cost-forecast"


def forecast_before_run(
    config: pytest.Config, state: BudgetSession, write: Callable[[str], None]
) -> None:
    """Print the forecast; then ``--budget-dry-run`` exits (status 0, no call made) and
    ``--budget-max-usd`` refuses to start when the worst case passes it (unless
    ``--budget-max-usd-mode=stop-at-cap``).  Called once, on the controller."""
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
    state.memo[FORECAST_KEY] = forecast
    for line in forecast.lines():
        write(line)
    if options.dry_run:
        pytest.exit("budget: dry run (--budget-dry-run): no model was called", returncode=0)
    expected, worst = forecast.usd()
    cap = options.max_usd
    if cap is None or options.max_usd_mode == "stop-at-cap" or worst is None or worst <= cap:
        return
    raise pytest.UsageError(
        f"--budget-max-usd={cap:g}: the forecast's worst case is ${worst:,.4f} (expected "
        f"${expected or 0:,.4f}), so the run did not start; raise the cap, narrow the run, or "
        "add --budget-max-usd-mode=stop-at-cap to run until the cap is reached"
    )


def forecast_after_run(state: BudgetSession, ledger: Any) -> list[str]:
    """The forecast beside what the run spent (terminal lines; empty without a forecast)."""
    forecast: Forecast | None = state.memo.get(FORECAST_KEY)
    if forecast is None or ledger is None:
        return []
    spent = None if ledger.count("unpriced") else ledger.spent_usd
    return forecast.after_run(
        spent, ledger.count("calls"), ledger.count("input_tokens"), ledger.count("output_tokens")
    )


def forecast_report(state: BudgetSession) -> dict[str, Any] | None:
    """The report's ``models.forecast`` block (None without a forecast)."""
    forecast: Forecast | None = state.memo.get(FORECAST_KEY)
    return None if forecast is None else forecast.as_dict()
