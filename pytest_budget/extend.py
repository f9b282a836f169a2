"""What a suite author imports: the registry, records, option readers, tables, page
parts and agent calls (docs/how-to/add-a-suite.md).

Everything else in the package is private.  Nothing is imported until it is used::

    from pytest_budget.extend import CellKind, Suite, register_suite
"""

from typing import TYPE_CHECKING

from pytest_budget._core.lazy_exports import lazy_exports

if TYPE_CHECKING:  # resolved on first use (see pytest_budget._core.lazy_exports)
    from pytest_budget._core.metric_spec import (
        MetricSpec,
    )
    from pytest_budget._core.option_checks import (
        OptionError,
        OptionReader,
        check_directory_option,
        check_output_file,
        parse_float_list,
        positive_int,
    )
    from pytest_budget._core.page_parts import (
        AGENT_COLUMN,
        Chart,
        Column,
        field_column,
        score_column,
    )
    from pytest_budget._core.records import (
        CellRecord,
        RecordError,
        UserCell,
        describe,
        field_value,
        must,
        of_type,
    )
    from pytest_budget._core.registry import (
        CellKind,
        ReplyRule,
        Role,
        Suite,
        SuiteOptions,
        lazy,
        reference_agent,
        register_suite,
    )
    from pytest_budget._core.roles import (
        AgentError,
        InvalidOutput,
        call_role,
    )
    from pytest_budget._plugin.state import (
        budget_session,
    )
    from pytest_budget.fixtures.core import (
        agent_axis,
    )
    from pytest_budget.models._loop import (
        run_blocking,
    )
    from pytest_budget.report._text_table import (
        format_value,
        render_table,
    )

__getattr__, __dir__ = lazy_exports(__name__, __file__)

__all__ = [
    "AGENT_COLUMN",
    "AgentError",
    "CellKind",
    "CellRecord",
    "Chart",
    "Column",
    "InvalidOutput",
    "MetricSpec",
    "OptionError",
    "OptionReader",
    "RecordError",
    "ReplyRule",
    "Role",
    "Suite",
    "SuiteOptions",
    "UserCell",
    "agent_axis",
    "budget_session",
    "call_role",
    "check_directory_option",
    "check_output_file",
    "describe",
    "field_column",
    "field_value",
    "format_value",
    "lazy",
    "must",
    "of_type",
    "parse_float_list",
    "positive_int",
    "reference_agent",
    "register_suite",
    "render_table",
    "run_blocking",
    "score_column",
]
