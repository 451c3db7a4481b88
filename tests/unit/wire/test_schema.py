"""The schema against what the code writes: its choices are the analyses' own constants, the objects the
serializers build with `dataclasses.asdict` have their dataclass's keys, and the cache's shapes follow it."""

import dataclasses
import typing

import pytest

from tb_leakfinder import wire
from tb_leakfinder.analyses import breakdown, capacity, diff, history, holders, static_buffers, step_sources, suspects
from tb_leakfinder.analyses import verdict as verdicts
from tb_leakfinder.model import history as history_points
from tb_leakfinder.model import recordings, sites
from tb_leakfinder.model.lifetimes import STATUS_NAMES
from tb_leakfinder.model.memory import CompiledProgramsInfo
from tb_leakfinder.wire import schema
from tb_leakfinder.wire.shape import conforms, typed_shape


def _choices(alias: object) -> set[object]:
    return set(typing.get_args(alias))


def test_each_choice_is_the_set_of_the_analyses_constants():
    assert _choices(schema.Verdict) == set(verdicts.SEVERITY)
    assert _choices(schema.LeakKind) == {suspects.GROWING, suspects.PERSISTENT, suspects.BOUNDED, suspects.WINDOW_END}
    assert _choices(schema.BufferStatus) == set(STATUS_NAMES)
    assert _choices(schema.SiteContext) == {sites.CONTEXT_PROGRAM, sites.CONTEXT_TRANSFER, sites.CONTEXT_OUTSIDE, ""}
    matches = {sites.MATCH_EXACT, sites.MATCH_AMBIGUOUS, sites.MATCH_NEAR, sites.MATCH_NONE, sites.MATCH_NO_HLO, ""}
    assert _choices(schema.SiteMatch) == matches
    assert _choices(schema.BreakdownCategory) == {breakdown.BUFFERS, breakdown.STACK, breakdown.BEFORE_WINDOW}
    kinds = {step_sources.STEP_NUM, step_sources.GROUP_ID, step_sources.ROOT_EVENTS, step_sources.DEVICE_PROGRAMS}
    assert _choices(schema.StepSourceKind) == kinds | {step_sources.TIME_WINDOWS, step_sources.NONE}
    assert _choices(schema.WholeProgramReason) == set(static_buffers._WHY)
    assert _choices(schema.FamilyStatus) == set(diff.STATUS_ORDER)
    assert _choices(schema.CaptureKind) == {history_points.PROFILE, history_points.ONE_MOMENT}
    assert _choices(schema.TimeSource) == {history_points.OWN_CLOCK, history_points.SESSION_NAME, history_points.FILE_MTIME}
    assert _choices(schema.HolderKind) == set(recordings.HOLDER_KINDS)
    assert _choices(schema.SearchStatus) == {recordings.COMPLETE, recordings.PARTIAL, recordings.FAILED}


def _keys(cls: type) -> set[str]:
    return set(typing.get_type_hints(cls))


def _fields(cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


@pytest.mark.parametrize(
    ("declared", "dataclass", "added"),
    [
        (schema.OutOfMemory, capacity.OutOfMemoryResult, set()),
        (schema.HeldAtError, capacity.HeldAtErrorResult, set()),
        (schema.HolderSearch, holders.HolderStatus, set()),
        (schema.Forecast, capacity.ForecastResult, set()),
        (schema.HistoryFamily, history.FamilyTrend, set()),
        (schema.WholeProgramBuffer, static_buffers.WholeProgramBufferResult, set()),
        (schema.ListedWholeProgramBuffer, static_buffers.WholeProgramBufferResult, {"count"}),
        (schema.PeakBuffer, static_buffers.PeakBufferResult, {"count"}),
        (schema.LongLivedTemporary, static_buffers.LongLivedTemporaryResult, set()),
        (schema.LogicalBuffer, static_buffers.BufferRange, set()),
        (schema.Actionable, static_buffers.Flag, set()),
        (schema.HeapCurve, static_buffers.HeapCurveResult, set()),
        (schema.ModuleSummary, static_buffers.ModuleSummaryResult, {"num_long_lived_temporaries"}),
        (schema.ModuleDetailBody, static_buffers.ModuleDetail, set()),
        (schema.CompiledPrograms, CompiledProgramsInfo, set()),
    ],
)
def test_an_object_built_from_a_dataclass_has_its_fields(declared, dataclass, added):
    """mypy cannot see into `asdict`: a field added to the dataclass must be declared too."""
    assert _keys(declared) == _fields(dataclass) | added


def test_a_host_report_conforms_and_each_required_key_it_lacks_makes_it_a_miss(hosts):
    good, bad = hosts["host0"], hosts["bad"]
    assert conforms(good, wire.HOST_SHAPE) and conforms(bad, wire.HOST_SHAPE)
    assert "error" not in good and "error" in bad  # the optional keys need not be there
    for key in schema.HostReport.__required_keys__:
        assert not conforms({k: v for k, v in good.items() if k != key}, wire.HOST_SHAPE), key
    allocator = good["allocators"][0]
    for key in schema.AllocatorReport.__required_keys__:
        lacking = {**good, "allocators": [{k: v for k, v in allocator.items() if k != key}]}
        assert not conforms(lacking, wire.HOST_SHAPE), key


def test_a_value_outside_its_declared_choices_makes_a_miss(hosts):
    good = hosts["host0"]
    assert not conforms({**good, "verdict": "leaky"}, wire.HOST_SHAPE)
    family = good["allocators"][0]["families"][0]
    wrong = {**good["allocators"][0], "families": [{**family, "kind": "grew"}]}
    assert not conforms({**good, "allocators": [wrong]}, wire.HOST_SHAPE)


def test_the_overview_rows_and_errors_follow_their_declarations(hosts):
    for host in hosts.values():
        rows = wire.overview_host_rows(host)
        assert conforms(rows, wire.OVERVIEW_ROWS_SHAPE)
        assert not conforms([{k: v for k, v in rows[0].items() if k != "step_source"}], wire.OVERVIEW_ROWS_SHAPE)
    error = wire.error_json("pod/session", "bad", "/x/bad.xplane.pb", "/x/bad.xplane.pb: truncated")
    assert conforms(error, wire.ERROR_SHAPE) and error["reason"] == "truncated"
    assert typed_shape(schema.UnreadableFile) == wire.ERROR_SHAPE
