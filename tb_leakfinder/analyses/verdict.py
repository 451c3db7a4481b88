"""The verdict of one allocator: leak, no_leak or inconclusive, with a one-sentence reason."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from tb_leakfinder.analyses.step_sources import MIN_STEPS, NONE, TIME_WINDOWS, StepSourceResult
from tb_leakfinder.analyses.summary import Summary
from tb_leakfinder.analyses.suspects import BOUNDED, GROWING, PERSISTENT, WINDOW_END, FamilyResult
from tb_leakfinder.analyses.words import buffers_label, format_bytes
from tb_leakfinder.model.sites import CONTEXT_PROGRAM, MATCH_AMBIGUOUS, SiteInfo

if TYPE_CHECKING:
    from tb_leakfinder.analyses.static_buffers import Flag, ModuleSummaryResult

LEAK = "leak"
NO_LEAK = "no_leak"
INCONCLUSIVE = "inconclusive"
SEVERITY = {NO_LEAK: 0, INCONCLUSIVE: 1, LEAK: 2}
# Time windows are not steps: a leak must grow in this share of them, not merely grow.
MOST_WINDOWS = 0.8
# The heap's rise over the window, as a share of its peak, past which a no-leak verdict says where it went.
HEAP_TREND_SHARE = 0.05
KIND_WORDS = {
    PERSISTENT: "made once and kept (persistent)",
    BOUNDED: "a cache that stopped growing (bounded)",
    WINDOW_END: "made in the last step (window end)",
}

# Followed, in a host's verdict, by how its format records memory events (the report adds the format's hint).
NO_EVENTS_REASON = "No memory events in this profile."


@dataclass
class Verdict:
    verdict: str
    reason: str
    # An inconclusive verdict that was a no-leak until a warning undermined it (`cannot_tell`): `check` fails on it.
    cannot_tell: bool = False


# The framework whose allocator a format's memory events come from, by the format's registry name (an XSpace's is
# TensorFlow's or JAX's: its allocator's label says which device).
FRAMEWORK_NAMES = {"torch": "PyTorch", "tensorflow": "TensorFlow", "jax": "JAX"}


def whose(label: str, framework: str = "", spoken: str = "") -> str:
    """Whose memory an allocator's verdict judged, for its first words: "PyTorch's CPU allocator", "the GPU:0
    allocator", "TensorFlow's CPU allocator (bfc_cpu_allocator_for_gpu)" (`framework`: the host's, as its format or
    file says; "" when neither tells; `spoken`: AllocatorInfo.spoken, "" for "<label> allocator"); never the
    process's, which the process-memory verdict judges beside it."""
    allocator = spoken or f"{label} allocator"
    return f"{framework}'s {allocator}" if framework else f"the {allocator}"


def _opening(word: str, judged: str) -> str:
    """'No leak in PyTorch's CPU allocator:', or 'No leak:' when who was judged is not known."""
    return f"{word} in {judged}:" if judged else f"{word}:"


def decide(
    summary: Summary,
    families: list[FamilyResult],
    source: StepSourceResult,
    strings: list[str],
    sites: Sequence[SiteInfo] = (),
    freed_in_one_step: int = 0,
    judged: str = "",
) -> Verdict:
    """`freed_in_one_step`: how many allocations a capture of one step made, when it freed every one of them; `judged`:
    whose memory the verdict is on (`whose`), which its first words say."""
    inconclusive, leak, no_leak = (_opening(w, judged) for w in ("Inconclusive", "Leak", "No leak"))
    if summary.num_allocations + summary.num_deallocations == 0:
        return Verdict(INCONCLUSIVE, NO_EVENTS_REASON)
    n, unit = source.num_steps, source.unit
    if source.too_short:
        lead = f" The largest never-freed family is {family_label(families[0], strings, sites)}." if families else ""
        found = "no step information and no time span to divide" if source.kind == NONE else source.description
        if n == 1 and freed_in_one_step:
            return Verdict(
                INCONCLUSIVE,
                f"{inconclusive} {found}, too few to tell growth from warm-up: {_all_freed(freed_in_one_step)}; "
                f"capture {MIN_STEPS} steps or more to rule out a leak.{lead}",
            )
        return Verdict(
            INCONCLUSIVE,
            f"{inconclusive} {found}, too few to tell growth from warm-up; capture at least {MIN_STEPS} steps.{lead}",
        )
    growing = [g for g in families if g.kind == GROWING]
    leaking = leak_families(families, source)
    if leaking:
        top = leaking[0]
        onset = f" from {unit} {top.onset_step} on" if top.late_onset and source.kind != TIME_WINDOWS else ""
        kept = "" if top.regrown else f", {top.steps} of {n} {unit}s never freed"
        more = ""
        if len(leaking) > 1:
            total = sum(g.bytes_per_step for g in leaking)
            more = f"; {len(leaking)} families grow, +{format_bytes(total)} per {unit} in all"
        return Verdict(
            LEAK,
            f"{leak} +{format_bytes(top.bytes_per_step)} per {unit} from {family_label(top, strings, sites)}{onset}"
            f"{kept} ({source.description}){more}",
        )
    if growing:
        top = growing[0]
        return Verdict(
            INCONCLUSIVE,
            f"{inconclusive} {family_label(top, strings, sites)} grows, but with no step information only in "
            f"{top.growth_steps} of {n} equal time windows; a leak needs growth in at least {_most(n)} of them. "
            f"Mark steps (step_num) or capture more of the run.",
        )
    kept_bytes = summary.never_freed_bytes
    if kept_bytes:
        kinds = [KIND_WORDS[k] for k in KIND_WORDS if any(g.kind == k for g in families)]
        return Verdict(
            NO_LEAK,
            f"{no_leak} nothing grows {unit} after {unit} over {source.description}; "
            f"the {format_bytes(kept_bytes)} still live at window end is {' or '.join(kinds)}{_heap_trend(summary, n, unit)}",
        )
    return Verdict(
        NO_LEAK, f"{no_leak} every buffer allocated over {source.description} was freed{_heap_trend(summary, n, unit)}"
    )


def _heap_trend(summary: Summary, num_steps: int, unit: str) -> str:
    """Why the heap figure may rise when no family leaks: said once it adds up to a share of the peak."""
    rise = summary.growth_bytes_per_step
    if rise <= 0 or rise * num_steps < HEAP_TREND_SHARE * max(1, summary.peak_heap_bytes):
        return ""
    return (
        f". The heap in use at {unit} ends fits +{format_bytes(rise)} per {unit} over the window (all allocations): "
        "memory that stopped growing or was released, which no family kept growing"
    )


def leak_families(families: list[FamilyResult], source: StepSourceResult) -> list[FamilyResult]:
    """The growing families that make a leak; with time windows, only those that grow in most windows."""
    growing = [g for g in families if g.kind == GROWING]
    if source.kind != TIME_WINDOWS:
        return growing
    return [g for g in growing if g.growth_steps >= _most(source.num_steps)]


def _most(num_windows: int) -> int:
    return math.ceil(MOST_WINDOWS * num_windows)


def family_label(family: FamilyResult, strings: list[str], sites: Sequence[SiteInfo] = ()) -> str:
    """'Mul [128,1024] output (train.py:42 in train_step)', 'Mean [32,*] output, 12 shapes', 'output 0 of
    jit_step(3) (dot_general f32[1024,1024], model.py:57)', or 'one buffer (4 buffers) regrown each step by
    ConcatV2, now [1920,1024]'."""
    op, region = strings[family.op], strings[family.region]
    site = sites[family.site] if 0 < family.site < len(sites) else None
    where = f" ({site.where})" if site is not None and site.where and site.where not in op else ""
    if family.regrown:
        buffers = "one buffer" if family.count <= 1 else f"{family.count} buffers"  # a KV cache per layer: one each
        return f"{buffers} regrown each step by {op or '(unknown op)'}, now {family.latest_shape}{where}"
    if site is not None and site.context == CONTEXT_PROGRAM and site.buffer:
        details = [f"{site.hlo_op} {site.hlo_shape}".strip(), site.where]
        if site.match == MATCH_AMBIGUOUS:
            others = len(site.candidates) - 1
            details.append("or another buffer of its size" if others == 1 else f"or one of {others} other buffers of its size")
        label = f"{op} ({', '.join(d for d in details if d)})"
    else:
        label = buffers_label(op, family.shape, region) + where
    return f"{label}, {family.num_shapes} shapes" if family.num_shapes > 1 else label


def worst(verdicts: list[str]) -> str:
    """The most severe of some verdicts (a run's, of its hosts')."""
    return max(verdicts, key=SEVERITY.__getitem__, default=INCONCLUSIVE)


# What a flagged whole-program buffer is, in a sentence (its `reason` is a key of the JSON, not a word).
FLAG_WORDS = {"live_out": "returned by", "never_freed": "never freed in"}


def flag_text(flag: Flag, module: str) -> str:
    """'broadcast_maximum_fusion f32[256,3072] at capture_jax.py:48 (3 MiB), returned by jit_step(30)'."""
    at = f" at {flag.source.rsplit('/', 1)[-1]}" if flag.source else ""
    what = FLAG_WORDS.get(flag.reason, flag.reason)
    return f"{flag.instruction or flag.op_name} {flag.shape}{at} ({format_bytes(flag.bytes)}), {what} {module}"


def host_verdict(
    allocators: list[tuple[str, Verdict]], modules: list[ModuleSummaryResult], no_events: str = NO_EVENTS_REASON
) -> Verdict:
    """A host's verdict: its allocators' (see `combine`; `no_events` is its reason when there are none), naming the
    buffers the static view flags; with no memory events, the static view's finding is the first sentence."""
    combined = combine(allocators, no_events)
    flagged = [flag_text(f, m.name) for m in modules for f in m.actionable]
    if not flagged:
        return combined
    more = f" and {len(flagged) - 3} more" if len(flagged) > 3 else ""
    if not allocators:
        kept = "XLA keeps it for the whole program" if len(flagged) == 1 else "XLA keeps them for the whole program"
        return replace(combined, reason=f"Static view: {'; '.join(flagged[:3])}{more}: {kept}. {combined.reason}")
    return replace(combined, reason=f"{combined.reason} Static view: check {'; '.join(flagged[:3])}{more}.")


# How a verdict begins when a warning undermines it (its `cannot_tell` field, which `check` fails on, says so).
CANNOT_TELL = "Cannot tell"


def cannot_tell(doubt: str, verdict: Verdict) -> Verdict:
    """A no-leak verdict that a doubt about its pairing of frees undermines: frees paired with the wrong allocations
    can hide a leak (a leak stays a leak: the bytes that stay are real)."""
    if verdict.verdict != NO_LEAK:
        return verdict
    return Verdict(INCONCLUSIVE, f"{CANNOT_TELL}: {doubt}. Taken at face value: {verdict.reason}", cannot_tell=True)


def not_analysed(message: str) -> Verdict:
    """The verdict of a host whose profile cannot be analysed."""
    return Verdict(INCONCLUSIVE, f"Not analysed: {message}")


def combine(named: list[tuple[str, Verdict]], no_events: str = NO_EVENTS_REASON) -> Verdict:
    """A host's verdict from its allocators' (label, verdict): the worst, naming every allocator that has it.

    Each leaking or inconclusive allocator's reason is given; when none leaks
    and all are fine, the first's (device memory, highest peak) stands for all.
    """
    if not named:
        return Verdict(INCONCLUSIVE, no_events)
    if len(named) == 1:
        return named[0][1]
    verdict = worst([v.verdict for _, v in named])
    chosen = [(name, v.reason) for name, v in named if v.verdict == verdict]
    # Undermined when one of those its reason gives is: no-leak reasons give only the first, never undermined.
    doubted = any(v.cannot_tell for _, v in named if v.verdict == verdict)
    if len(chosen) == 1:
        return Verdict(verdict, f"{chosen[0][0]}: {chosen[0][1]}", doubted)
    names = ", ".join(name for name, _ in chosen)
    word = {LEAK: "Leak", NO_LEAK: "No leak", INCONCLUSIVE: "Inconclusive"}[verdict]
    reasons = chosen[:1] if verdict == NO_LEAK else chosen
    text = f"{word} on {len(chosen)} allocators ({names}). " + "; ".join(f"{n}: {r}" for n, r in reasons)
    return Verdict(verdict, text, doubted)


def _all_freed(allocations: int) -> str:
    """'all 40 allocations of the one step were freed'; for one, 'the one allocation of the one step was freed'."""
    if allocations == 1:
        return "the one allocation of the one step was freed"
    return f"all {allocations:,} allocations of the one step were freed"
