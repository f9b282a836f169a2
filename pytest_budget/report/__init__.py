"""Reports of budget runs: the JSON document, merging shard reports, the HTML page.

Plain Python (the figures need the ``report`` extra)::

    from pytest_budget.report import load_report, report_cells, render_html
"""

from typing import TYPE_CHECKING

from pytest_budget._core.lazy_exports import lazy_exports

if TYPE_CHECKING:  # resolved on first use (see pytest_budget._core.lazy_exports)
    from pytest_budget._core.record_json import (
        cell_to_json,
    )
    from pytest_budget.report._document import (
        GZIP_SUFFIX,
        READABLE_VERSIONS,
        REPORT_SCHEMA_VERSION,
        ReportFileError,
        build_report,
        cell_sort_key,
        finite_cell,
        hoist_rollouts,
        is_gzip,
        load_report,
        load_report_json,
        pack_samples,
        report_cells,
        unpack_samples,
        write_report,
    )
    from pytest_budget.report._html import (
        INSTALL_HINT,
        MissingReportExtra,
        render_html,
        require_matplotlib,
        write_html_report,
    )
    from pytest_budget.report._merge import (
        MergeError,
        merge_reports,
    )

__getattr__, __dir__ = lazy_exports(__name__, __file__)

__all__ = [
    "GZIP_SUFFIX",
    "INSTALL_HINT",
    "READABLE_VERSIONS",
    "REPORT_SCHEMA_VERSION",
    "MergeError",
    "MissingReportExtra",
    "ReportFileError",
    "build_report",
    "cell_sort_key",
    "cell_to_json",
    "finite_cell",
    "hoist_rollouts",
    "is_gzip",
    "load_report",
    "load_report_json",
    "merge_reports",
    "pack_samples",
    "render_html",
    "report_cells",
    "require_matplotlib",
    "unpack_samples",
    "write_html_report",
    "write_report",
]
