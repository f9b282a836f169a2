"""Hooks a project implements (in a conftest or a plugin) to supply its own agents.

Each hook returns the agent that fills one role, or ``None`` to leave the role to the
next source (the first non-``None`` answer wins).  Precedence, highest first: a fixture
override of ``budget_<role>`` in a conftest; then ``--budget-agent`` names, where ``user``
stands for the agent from these hooks; then the hooks when ``--budget-agent`` is not
given; then the suite's reference agents.
An agent is any object with the role's method, or a plain callable; sync or async.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    import pytest

hookspec = pluggy.HookspecMarker("pytest")


@hookspec(firstresult=True)
def pytest_budget_planner(config: pytest.Config) -> Any | None:
    """Return the triage planner: an object with ``plan(request)`` or a callable.

    ``request.items`` holds the problems (``.id``, ``.text``, ``.value``) and
    ``request.budget`` the token budget B; ``request.prompt`` is the full text prompt.
    Return a ``Plan``, a mapping ``{"plan": [{"id": ..., "tokens": ...}]}`` or raw text.

    .. code-block:: python

        # conftest.py
        def pytest_budget_planner(config):
            from my_agent import MyPlanner
            return MyPlanner(model="local")
    """


@hookspec(firstresult=True)
def pytest_budget_solver(config: pytest.Config) -> Any | None:
    """Return the solver: ``solve(problem, max_tokens)`` returning a ``Solution`` or text.

    The solver answers one problem (``problem.id``, ``problem.text``); ``max_tokens`` is a
    hard output cap or ``None``.  Phase 0 of the triage suite calls it once per item.

    .. code-block:: python

        # conftest.py
        def pytest_budget_solver(config):
            return lambda problem, max_tokens: my_model.complete(problem.text)
    """


@hookspec(firstresult=True)
def pytest_budget_estimator(config: pytest.Config) -> Any | None:
    """Return the awareness estimator: ``estimate(probe)`` returning an interval or text.

    ``probe`` carries ``env``, ``k`` (turns so far), ``used`` and ``budget`` (per budget
    dimension), ``prefix`` (the turns so far) and ``text`` (a ready prompt).  Return raw text
    ``<answer>[lo, hi]</answer>`` / ``<answer>impossible</answer>`` (Warehouse:
    ``dim:[lo, hi], ...``) or an ``Interval``/``IntervalMap``/``Impossible`` object.

    .. code-block:: python

        # conftest.py
        def pytest_budget_estimator(config):
            return MyEstimator()
    """


@hookspec(firstresult=True)
def pytest_budget_actor(config: pytest.Config) -> Any | None:
    """Return the environment actor: ``act(observation)`` returning an action or text.

    The awareness suite rolls it out (Sokoban, Warehouse, Search) with no budget constraint.
    ``observation`` has ``env``, ``rollout_id``, ``turn``, ``text`` (the prompt) and
    ``state`` (the environment's structured view); return the reply text, or a mapping
    ``{"text": ..., "usage": {"tokens": n}}`` to report your own token count.

    .. code-block:: python

        # conftest.py
        def pytest_budget_actor(config):
            return MyActor()
    """


@hookspec(firstresult=True)
def pytest_budget_tool_agent(config: pytest.Config) -> Any | None:
    """Return the tool-calling agent for the planning suite: ``act(observation)``.

    ``observation`` has ``messages`` (an OpenAI Chat Completions message list: instructions,
    the user's request, earlier calls and their results), ``tools`` (OpenAI function specs,
    each description stating the tool's cost), ``step`` and ``max_steps``.  Return an
    assistant message ``{"content": ..., "tool_calls": [...]}`` (an SDK message object works
    too), and finally text with ``<answer>FINAL_ID</answer>``.

    .. code-block:: python

        # conftest.py
        def pytest_budget_tool_agent(config):
            return MyToolAgent()
    """


@hookspec(firstresult=True)
def pytest_budget_online_actor(config: pytest.Config) -> Any | None:
    """Return the online actor the awareness suite's online mode evaluates, or None.

    ``act(observation, used, cap)`` (sync or async) returns the action and, optionally, an
    estimate or a stop (see ``pytest_budget.awareness.online._protocol``).  Example::

        def pytest_budget_online_actor(config):
            return MyOnlineActor()
    """


@hookspec(firstresult=True)
def pytest_budget_agent(config: pytest.Config, role: str) -> Any | None:
    """Return the agent for ``role``, any registered suite's role, or None.

    Asked when the role's own hook above does not answer (a suite registered from a
    conftest has no hook of its own): the one face for every role.  Example::

        def pytest_budget_agent(config, role):
            if role == "roller":
                return MyRoller()
            return None
    """
