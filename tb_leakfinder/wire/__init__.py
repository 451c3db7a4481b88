"""The wire model: the JSON that the plugin's routes, the CLI and the Python API all answer (frontend/src/wire.ts is
its TypeScript). Its objects declared once (`schema`, the wire types), the serializers that build them from the
analyses' dataclasses (`serialize`), the shape check of JSON read back (`shape`); the
per-format advice it carries comes from each format (the read registry's hints). May import the model, analyses and
read's format registry; never store, engine or views."""

from importlib import import_module
from typing import TYPE_CHECKING, Any

from tb_leakfinder.wire.serialize import (
    REPORT_VERSION,
    SUMMARY_LONG_LIVED,
    Json,
    allocator_json,
    buffers_json,
    comparison_json,
    error_json,
    forecast_json,
    format_listings,
    history_json,
    host_error_json,
    host_json,
    limits_json,
    module_detail_json,
    module_summary_json,
    overview_host_rows,
    overview_json,
    record_events,
    report_json,
    run_json,
    site_json,
    step_source_json,
    steps_json,
    timeline_json,
)
from tb_leakfinder.wire.shape import Shape, conforms, typed_shape

# The schema's classes (a few hundred annotations, each compiled by `typing`) and the shapes derived from them
# (each annotation evaluated) took ~6 ms of every cold report, which builds plain dicts and checks no shape: they
# are made on first use, by the disk cache, the wire types' tool and the tests. mypy sees them as imported.
if TYPE_CHECKING:
    from tb_leakfinder.wire.schema import (
        AllocatorReport,
        BuffersAnswer,
        ComparisonAnswer,
        ErrorAnswer,
        HistoryAnswer,
        HostReport,
        ModuleAnswer,
        OverviewAnswer,
        OverviewRow,
        ReportAnswer,
        RunReport,
        RunsAnswer,
        TimelineAnswer,
        UnreadableFile,
    )

    # What a disk cache entry stores (a host's report, its overview rows) and what names an unreadable file: an
    # entry is used only if it has these shapes, so no view meets a missing key.
    HOST_SHAPE: Shape
    OVERVIEW_ROWS_SHAPE: Shape
    ERROR_SHAPE: Shape
else:

    def __getattr__(name: str) -> Any:
        """A name of `__all__` not bound yet: a class of the schema, or a shape."""
        if name not in __all__:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        schema = import_module("tb_leakfinder.wire.schema")
        value: Any = getattr(schema, name) if name not in _SHAPES else typed_shape(getattr(schema, _SHAPES[name]))
        value = [value] if name == "OVERVIEW_ROWS_SHAPE" else value
        globals()[name] = value
        return value


_SHAPES = {"HOST_SHAPE": "HostReport", "OVERVIEW_ROWS_SHAPE": "OverviewRow", "ERROR_SHAPE": "UnreadableFile"}

__all__ = [
    "ERROR_SHAPE",
    "HOST_SHAPE",
    "OVERVIEW_ROWS_SHAPE",
    "REPORT_VERSION",
    "SUMMARY_LONG_LIVED",
    "AllocatorReport",
    "BuffersAnswer",
    "ComparisonAnswer",
    "ErrorAnswer",
    "HistoryAnswer",
    "HostReport",
    "Json",
    "ModuleAnswer",
    "OverviewAnswer",
    "OverviewRow",
    "ReportAnswer",
    "RunReport",
    "RunsAnswer",
    "Shape",
    "TimelineAnswer",
    "UnreadableFile",
    "allocator_json",
    "buffers_json",
    "comparison_json",
    "conforms",
    "error_json",
    "forecast_json",
    "format_listings",
    "history_json",
    "host_error_json",
    "host_json",
    "limits_json",
    "module_detail_json",
    "module_summary_json",
    "overview_host_rows",
    "overview_json",
    "record_events",
    "report_json",
    "run_json",
    "site_json",
    "step_source_json",
    "steps_json",
    "timeline_json",
]
