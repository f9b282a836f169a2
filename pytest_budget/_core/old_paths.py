"""Module paths from before the layer folders keep importing for one release, with a warning.

Release 0.2 moved every module into the folder of its layer (``pytest_budget._core``,
``pytest_budget.report`` ...) and made private what users should not import.  A user's
``from pytest_budget.roles import call_role`` must not break on upgrade: a finder placed
first on :data:`sys.meta_path` answers each old path with the module at its new path (the
same module object, so classes stay identical and ``isinstance`` keeps working) and warns
with a :class:`DeprecationWarning` naming the new place.  Old paths are removed in
:data:`REMOVED_IN`.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from collections.abc import Sequence
from types import ModuleType

__all__ = ["MOVED", "REMOVED_IN", "MovedPathFinder", "install_old_paths"]

REMOVED_IN = "0.3.0"

#: Old dotted path -> new dotted path, for every module whose path changed.
MOVED: dict[str, str] = {
    "pytest_budget._snapshot": "pytest_budget._plugin.snapshot",
    "pytest_budget.agent_log": "pytest_budget._core.agent_log",
    "pytest_budget.agents": "pytest_budget._run.agent_names",
    "pytest_budget.awareness.answers": "pytest_budget.awareness._replay.answers",
    "pytest_budget.awareness.bagen_logs": "pytest_budget.awareness._logs.bagen",
    "pytest_budget.awareness.dialogue": "pytest_budget.awareness._replay.dialogue",
    "pytest_budget.awareness.environments": "pytest_budget.awareness._environments",
    "pytest_budget.awareness.estimators": "pytest_budget.awareness._estimators",
    "pytest_budget.awareness.evaluate": "pytest_budget.awareness._evaluate",
    "pytest_budget.awareness.fair_split": "pytest_budget.awareness._replay.fair_split",
    "pytest_budget.awareness.figures": "pytest_budget.awareness._figures",
    "pytest_budget.awareness.floor": "pytest_budget.awareness._replay.floor",
    "pytest_budget.awareness.inspect_logs": "pytest_budget.awareness._logs.inspect_eval",
    "pytest_budget.awareness.intervals": "pytest_budget.awareness._scoring.intervals",
    "pytest_budget.awareness.llm": "pytest_budget.awareness._llm",
    "pytest_budget.awareness.logged": "pytest_budget.awareness._replay.logged",
    "pytest_budget.awareness.metrics": "pytest_budget.awareness._scoring.metrics",
    "pytest_budget.awareness.metrics_probes": "pytest_budget.awareness._scoring.probe_metrics",
    "pytest_budget.awareness.metrics_rollouts": "pytest_budget.awareness._scoring.rollout_metrics",
    "pytest_budget.awareness.online.cell": "pytest_budget.awareness.online._cell",
    "pytest_budget.awareness.online.envs": "pytest_budget.awareness.online._envs",
    "pytest_budget.awareness.online.figures": "pytest_budget.awareness.online._figures",
    "pytest_budget.awareness.online.llm": "pytest_budget.awareness.online._llm",
    "pytest_budget.awareness.online.options": "pytest_budget.awareness.online._options",
    "pytest_budget.awareness.online.prompts": "pytest_budget.awareness.online._prompts",
    "pytest_budget.awareness.online.protocol": "pytest_budget.awareness.online._protocol",
    "pytest_budget.awareness.online.reference": "pytest_budget.awareness.online._reference",
    "pytest_budget.awareness.online.runner": "pytest_budget.awareness.online._runner",
    "pytest_budget.awareness.online.scoring": "pytest_budget.awareness.online._scoring",
    "pytest_budget.awareness.online.summary": "pytest_budget.awareness.online._summary",
    "pytest_budget.awareness.options": "pytest_budget.awareness._options",
    "pytest_budget.awareness.page": "pytest_budget.awareness._page",
    "pytest_budget.awareness.per_probe": "pytest_budget.awareness._scoring.per_probe",
    "pytest_budget.awareness.probes": "pytest_budget.awareness._replay.probes",
    "pytest_budget.awareness.prompts": "pytest_budget.awareness._prompts",
    "pytest_budget.awareness.record": "pytest_budget.awareness._cell_records",
    "pytest_budget.awareness.retrieval_index": "pytest_budget.awareness.retrieval._index",
    "pytest_budget.awareness.retrieval_server": "pytest_budget.awareness.retrieval._server",
    "pytest_budget.awareness.roles": "pytest_budget.awareness._roles",
    "pytest_budget.awareness.rollouts": "pytest_budget.awareness._replay.rollouts",
    "pytest_budget.awareness.samples": "pytest_budget.awareness._samples",
    "pytest_budget.awareness.search_actor": "pytest_budget.awareness.search._actor",
    "pytest_budget.awareness.search_corpus": "pytest_budget.awareness.search._corpus",
    "pytest_budget.awareness.search_env": "pytest_budget.awareness.search._env",
    "pytest_budget.awareness.search_facts": "pytest_budget.awareness.search._facts",
    "pytest_budget.awareness.search_steps": "pytest_budget.awareness.search._steps",
    "pytest_budget.awareness.search_world": "pytest_budget.awareness.search._world",
    "pytest_budget.awareness.sokoban_actor": "pytest_budget.awareness.sokoban._actor",
    "pytest_budget.awareness.sokoban_env": "pytest_budget.awareness.sokoban._env",
    "pytest_budget.awareness.sokoban_puzzles": "pytest_budget.awareness.sokoban._puzzles",
    "pytest_budget.awareness.subsample": "pytest_budget.awareness._replay.subsample",
    "pytest_budget.awareness.suite": "pytest_budget.awareness._suite",
    "pytest_budget.awareness.summary": "pytest_budget.awareness._summary",
    "pytest_budget.awareness.trajectories": "pytest_budget.awareness._logs.trajectories",
    "pytest_budget.awareness.trajectory_formats": "pytest_budget.awareness._logs.formats",
    "pytest_budget.awareness.verdicts": "pytest_budget.awareness._logs.verdicts",
    "pytest_budget.awareness.warehouse_actions": "pytest_budget.awareness.warehouse._actions",
    "pytest_budget.awareness.warehouse_challenges": "pytest_budget.awareness.warehouse._challenges",
    "pytest_budget.awareness.warehouse_env": "pytest_budget.awareness.warehouse._env",
    "pytest_budget.awareness.warehouse_market": "pytest_budget.awareness.warehouse._market",
    "pytest_budget.awareness.warehouse_policy": "pytest_budget.awareness.warehouse._policy",
    "pytest_budget.bootstrap": "pytest_budget._stats.bootstrap",
    "pytest_budget.budget": "pytest_budget._core.budget",
    "pytest_budget.ci_defaults": "pytest_budget._stats.ci_defaults",
    "pytest_budget.cli": "pytest_budget.report._cli",
    "pytest_budget.concurrency": "pytest_budget._core.concurrency",
    "pytest_budget.crashed": "pytest_budget._run.crashed",
    "pytest_budget.distribute": "pytest_budget._run.distribute",
    "pytest_budget.files": "pytest_budget._core.files",
    "pytest_budget.fingerprint": "pytest_budget._core.fingerprint",
    "pytest_budget.forecast": "pytest_budget._run.forecast",
    "pytest_budget.forecast_suites": "pytest_budget._plugin.forecast_hooks",
    "pytest_budget.frontier": "pytest_budget.report._frontier",
    "pytest_budget.gating": "pytest_budget._stats.gating",
    "pytest_budget.hookspecs": "pytest_budget._plugin.hookspecs",
    "pytest_budget.html": "pytest_budget.report._html",
    "pytest_budget.html.batch": "pytest_budget.report._html.batch",
    "pytest_budget.html.compare": "pytest_budget.report._html.compare",
    "pytest_budget.html.compare_page": "pytest_budget.report._html.compare_page",
    "pytest_budget.html.drill_js": "pytest_budget.report._html.drill_script",
    "pytest_budget.html.figures": "pytest_budget.report._html.figures",
    "pytest_budget.html.frontier": "pytest_budget.report._html.frontier_chart",
    "pytest_budget.html.layout": "pytest_budget.report._html.layout",
    "pytest_budget.html.page": "pytest_budget.report._html.page",
    "pytest_budget.html.samples": "pytest_budget.report._html.drill_data",
    "pytest_budget.html.tables": "pytest_budget.report._html.columns",
    "pytest_budget.interrupt": "pytest_budget._plugin.interrupt",
    "pytest_budget.lazy_exports": "pytest_budget._core.lazy_exports",
    "pytest_budget.llm_agents": "pytest_budget._run.model_agents",
    "pytest_budget.markdown_summary": "pytest_budget.report._markdown",
    "pytest_budget.merge": "pytest_budget.report._merge",
    "pytest_budget.metric_spec": "pytest_budget._core.metric_spec",
    "pytest_budget.metrics": "pytest_budget._stats.gated_metrics",
    "pytest_budget.models.agents": "pytest_budget.models._llm_agent",
    "pytest_budget.models.cell_calls": "pytest_budget.models._cell_calls",
    "pytest_budget.models.chat_types": "pytest_budget.models._chat_types",
    "pytest_budget.models.client": "pytest_budget.models._client",
    "pytest_budget.models.http_transport": "pytest_budget.models._http_transport",
    "pytest_budget.models.ledger": "pytest_budget.models._ledger",
    "pytest_budget.models.loop": "pytest_budget.models._loop",
    "pytest_budget.models.messages": "pytest_budget.models._messages",
    "pytest_budget.models.preflight": "pytest_budget.models._preflight",
    "pytest_budget.models.prices": "pytest_budget.models._prices",
    "pytest_budget.models.provider": "pytest_budget.models._provider",
    "pytest_budget.models.recorder": "pytest_budget.models._recorder",
    "pytest_budget.models.retry": "pytest_budget.models._retry",
    "pytest_budget.models.run": "pytest_budget.models._setup",
    "pytest_budget.models.runtime": "pytest_budget.models._runtime",
    "pytest_budget.models.usage": "pytest_budget.models._usage",
    "pytest_budget.option_checks": "pytest_budget._core.option_checks",
    "pytest_budget.options": "pytest_budget._run.options",
    "pytest_budget.page_parts": "pytest_budget._core.page_parts",
    "pytest_budget.paired": "pytest_budget._stats.paired",
    "pytest_budget.planning.agents": "pytest_budget.planning._reference_agents",
    "pytest_budget.planning.blocking": "pytest_budget.planning._blocking",
    "pytest_budget.planning.code_metrics": "pytest_budget.planning._code_metrics",
    "pytest_budget.planning.costs": "pytest_budget.planning._costs",
    "pytest_budget.planning.env": "pytest_budget.planning._env",
    "pytest_budget.planning.episode": "pytest_budget.planning._episode",
    "pytest_budget.planning.evaluate": "pytest_budget.planning._evaluate",
    "pytest_budget.planning.figures": "pytest_budget.planning._figures",
    "pytest_budget.planning.ground_truth": "pytest_budget.planning._ground_truth",
    "pytest_budget.planning.ids": "pytest_budget.planning._ids",
    "pytest_budget.planning.intervals": "pytest_budget.planning._intervals",
    "pytest_budget.planning.levenshtein": "pytest_budget.planning._levenshtein",
    "pytest_budget.planning.llm": "pytest_budget.planning._llm",
    "pytest_budget.planning.metrics": "pytest_budget.planning._metrics",
    "pytest_budget.planning.options": "pytest_budget.planning._options",
    "pytest_budget.planning.page": "pytest_budget.planning._page",
    "pytest_budget.planning.per_query": "pytest_budget.planning._per_query",
    "pytest_budget.planning.prompts": "pytest_budget.planning._prompts",
    "pytest_budget.planning.queries": "pytest_budget.planning._queries",
    "pytest_budget.planning.record": "pytest_budget.planning._cell_record",
    "pytest_budget.planning.records": "pytest_budget.planning._episode_records",
    "pytest_budget.planning.roles": "pytest_budget.planning._roles",
    "pytest_budget.planning.samples": "pytest_budget.planning._samples",
    "pytest_budget.planning.suite": "pytest_budget.planning._suite",
    "pytest_budget.planning.summary": "pytest_budget.planning._summary",
    "pytest_budget.planning.tool_specs": "pytest_budget.planning._tool_specs",
    "pytest_budget.planning.tools": "pytest_budget.planning._tools",
    "pytest_budget.plugin_markdown": "pytest_budget._plugin.markdown",
    "pytest_budget.plugin_models": "pytest_budget._plugin.models",
    "pytest_budget.plugin_options": "pytest_budget._plugin.options",
    "pytest_budget.plugin_role_agents": "pytest_budget._plugin.role_agents",
    "pytest_budget.plugin_state": "pytest_budget._plugin.state",
    "pytest_budget.progress": "pytest_budget._run.progress",
    "pytest_budget.record_json": "pytest_budget._core.record_json",
    "pytest_budget.records": "pytest_budget._core.records",
    "pytest_budget.redact": "pytest_budget._core.redact",
    "pytest_budget.repeats": "pytest_budget._stats.repeats",
    "pytest_budget.replies": "pytest_budget._core.replies",
    "pytest_budget.report_pool": "pytest_budget.report._sample_pool",
    "pytest_budget.report_schema": "pytest_budget.report._schema",
    "pytest_budget.rerun": "pytest_budget._run.rerun",
    "pytest_budget.roles": "pytest_budget._core.roles",
    "pytest_budget.run_gate": "pytest_budget._stats.run_gate",
    "pytest_budget.run_reporter": "pytest_budget._plugin.reporter",
    "pytest_budget.samples": "pytest_budget._core.samples",
    "pytest_budget.sequential": "pytest_budget._stats.sequential",
    "pytest_budget.session": "pytest_budget._run.session",
    "pytest_budget.shard": "pytest_budget._run.shard",
    "pytest_budget.sizes": "pytest_budget._core.sizes",
    "pytest_budget.sokoban": "pytest_budget._environments.sokoban",
    "pytest_budget.sokoban_board": "pytest_budget._environments.sokoban_board",
    "pytest_budget.suite_hooks": "pytest_budget._plugin.suite_hooks",
    "pytest_budget.suite_registry": "pytest_budget._core.registry",
    "pytest_budget.summary_tables": "pytest_budget.report._terminal_tables",
    "pytest_budget.tables": "pytest_budget.report._text_table",
    "pytest_budget.textscan": "pytest_budget._core.textscan",
    "pytest_budget.tokens": "pytest_budget._core.tokens",
    "pytest_budget.triage.arithmetic": "pytest_budget.triage._arithmetic",
    "pytest_budget.triage.batch": "pytest_budget.triage._batch",
    "pytest_budget.triage.domains": "pytest_budget.triage._domains",
    "pytest_budget.triage.evaluate": "pytest_budget.triage._evaluate",
    "pytest_budget.triage.figures": "pytest_budget.triage._figures",
    "pytest_budget.triage.graders": "pytest_budget.triage._graders",
    "pytest_budget.triage.intervals": "pytest_budget.triage._intervals",
    "pytest_budget.triage.llm": "pytest_budget.triage._llm",
    "pytest_budget.triage.options": "pytest_budget.triage._options",
    "pytest_budget.triage.page": "pytest_budget.triage._page",
    "pytest_budget.triage.per_item": "pytest_budget.triage._per_item",
    "pytest_budget.triage.phase0": "pytest_budget.triage._phase0",
    "pytest_budget.triage.plan_parser": "pytest_budget.triage._plan_parser",
    "pytest_budget.triage.planners": "pytest_budget.triage._planners",
    "pytest_budget.triage.pool_file": "pytest_budget.triage._pool_file",
    "pytest_budget.triage.pools": "pytest_budget.triage._pools",
    "pytest_budget.triage.prompts": "pytest_budget.triage._prompts",
    "pytest_budget.triage.puzzles": "pytest_budget.triage._puzzles",
    "pytest_budget.triage.record": "pytest_budget.triage._cell_record",
    "pytest_budget.triage.resolve": "pytest_budget.triage._resolve",
    "pytest_budget.triage.roles": "pytest_budget.triage._roles",
    "pytest_budget.triage.samples": "pytest_budget.triage._samples",
    "pytest_budget.triage.scoring": "pytest_budget.triage._scoring",
    "pytest_budget.triage.solutions": "pytest_budget.triage._solutions",
    "pytest_budget.triage.suite": "pytest_budget.triage._suite",
    "pytest_budget.triage.summary": "pytest_budget.triage._summary",
    "pytest_budget.triage.types": "pytest_budget.triage._types",
    "pytest_budget.written": "pytest_budget._core.written",
}


def _advice(new: str) -> str:
    """Where the public names of ``new`` are imported from: the path up to its first
    private (underscored) part."""
    parts = new.split(".")
    face = ".".join(next(([*parts[:i]] for i, p in enumerate(parts) if p.startswith("_")), parts))
    if face == "pytest_budget":
        return "import the public names from pytest_budget or pytest_budget.extend"
    return f"import its public names from {face}"


class MovedPathFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves each old module path with the module now at its new path."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        new = MOVED[spec.name]
        warnings.warn(
            f"{spec.name} moved to {new} ({_advice(new)}); the old path is removed in {REMOVED_IN}",
            DeprecationWarning,
            stacklevel=2,
        )
        module = importlib.import_module(new)
        # The import system overwrites __spec__ after this returns: keep the module's own
        # (a package's submodule search locations and resources live in it).
        spec.loader_state = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        own_spec = getattr(module.__spec__, "loader_state", None)
        if own_spec is not None:
            module.__spec__ = own_spec


def install_old_paths() -> None:
    """Put the finder first on :data:`sys.meta_path` (once).

    First, not last: an old package path such as ``pytest_budget.html`` resolves to the
    new package, whose ``__path__`` would otherwise let the path finder load its
    submodules a second time under their old names.
    """
    if not any(isinstance(finder, MovedPathFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, MovedPathFinder())
