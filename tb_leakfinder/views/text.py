"""The CLI's human-readable rendering of the report JSON."""

from __future__ import annotations

import time
from collections.abc import Callable

from tb_leakfinder.analyses.capacity import known_capacity
from tb_leakfinder.analyses.verdict import INCONCLUSIVE, LEAK, NO_LEAK
from tb_leakfinder.analyses.words import (
    buffers_label,
    count_of,
    format_bytes,
    format_fraction,
    held_by,
    short_program_ids,
    tensor_and_chunks,
)
from tb_leakfinder.engine import queries
from tb_leakfinder.engine.history import tensorboard_run
from tb_leakfinder.views.terminal import visible_json
from tb_leakfinder.wire import Json

# What a host analysed without a recording of its process's memory says (the tab says it too: panels/process_memory.ts).
NOT_RECORDED = (
    "Process memory was not recorded: record it with tb_leakfinder.capture(...), which writes the training process's"
    " and its DataLoader workers' memory beside the profile (psutil, or /proc on Linux)."
)

VERDICT_WORDS = {LEAK: "LEAK", NO_LEAK: "no leak", INCONCLUSIVE: "inconclusive"}
TOP_ROWS = 10
CALLED_FROM = " ← "  # between a line of code and the Python frame that led to it
TEXT_FRAMES = 2  # the Python frames a text row shows after its line of code
# A holder's kind (wire/schema.HolderKind) in words.
HOLDER_KIND_WORDS = {
    "list": "an element of a list",
    "dict_entry": "a dict entry",
    "attribute": "an attribute",
    "class_attribute": "a class attribute",
    "default_argument": "a mutable default argument",
    "closure": "a closure cell",
    "frame_local": "a local of a running function",
    "global": "a module-level name",
    "module": "a module's parameter or submodule",
    "buffer": "a module's registered buffer",
    "autograd_graph": "tensors an autograd graph saved",
    "variable": "a tf.Variable",
}


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return ["    " + fmt.format(*headers).rstrip()] + ["    " + fmt.format(*r).rstrip() for r in rows]


BREAKDOWN_LABELS = {"stack": "stack (reserved)", "before_window": "allocated before the window"}
# Each cause in a few words, as the views lead its sentence; its page's section is CAUSES_PAGE#<id>.
CAUSE_TITLES = {
    "graph_kept": "the autograd graph is kept",
    "regrown": "one buffer regrown every step",
    "optimizer_per_step": "an optimizer made every step",
    "modules_per_step": "modules made every step",
    "cache_per_step": "a cache that gains an entry every step",
    "variable_per_step": "a tf.Variable made every step",
    "recompile_per_step": "a function compiled again every step",
}
CAUSES_PAGE = "docs/causes.md"


def cause_text(cause: Json) -> str:
    """A likely cause in one sentence: "likely cause: a function compiled again every step (evidence) — fix: ...,
    see docs/causes.md#recompile_per_step"."""
    title = CAUSE_TITLES.get(cause["id"], cause["id"])
    return f"likely cause: {title} ({cause['evidence']}) — fix: {cause['fix']}, see {CAUSES_PAGE}#{cause['id']}"


def distinct_causes(families: list[Json]) -> list[tuple[str, str, str]]:
    """(id, evidence, fix) of each likely cause of `families`, in the families' order: one per id, its families'
    distinct evidence joined by "; " (the families of one graph share theirs)."""
    evidence: dict[str, dict[str, None]] = {}
    fixes: dict[str, str] = {}
    for family in families:
        cause = family["cause"]
        if cause is not None:
            evidence.setdefault(cause["id"], {})[cause["evidence"]] = None
            fixes[cause["id"]] = cause["fix"]
    return [(cause, "; ".join(said), fixes[cause]) for cause, said in evidence.items()]


def cause_texts(families: list[Json]) -> list[str]:
    """Each distinct likely cause of `families` in one sentence: "likely cause: the autograd graph is kept
    (evidence) — fix: ..., see docs/causes.md#graph_kept"."""
    return [
        f"likely cause: {CAUSE_TITLES.get(cause, cause)} ({evidence}) — fix: {fix}, see {CAUSES_PAGE}#{cause}"
        for cause, evidence, fix in distinct_causes(families)
    ]


def peak_text(a: Json, unit: str = "step") -> str:
    """'peak 20.0 GiB of 31.3 GiB (64%) at step 7 (stack 20.0 GiB, heap 12 MiB)'; a window is no step: 'no steps'."""
    peak = a["peak_bytes_in_use"]
    capacity = known_capacity(a["memory_capacity_bytes"], peak)
    text = f"peak {format_bytes(peak)}"
    if capacity:
        text += f" of {format_bytes(capacity)} ({format_fraction(peak / capacity)})"
    elif peak:
        text += " (no free memory reported)"
    if a["peak_step"] is not None:
        text += f" at step {a['peak_step']}" if unit == "step" else " (no steps)"
    if a["peak_stack_reserved_bytes"]:
        text += f" (stack {format_bytes(a['peak_stack_reserved_bytes'])}, heap {format_bytes(a['peak_heap_bytes'])})"
    return text


def once_each(warnings: list[str]) -> list[str]:
    """Each warning once, in the order first given, with how often it was given when more than once."""
    counts: dict[str, int] = {}
    for w in warnings:
        counts[w] = counts.get(w, 0) + 1
    return [w if n == 1 else f"{w} (\u00d7{n})" for w, n in counts.items()]


def breakdown_label(row: Json) -> str:
    return BREAKDOWN_LABELS.get(row["category"]) or buffers_label(row["op"], row["shape"], row["region"])


def where_words(row: Json) -> str:
    """A row's innermost frame of the model's or the user's code first, then the user's line that called it:
    "Owlv2Attention.forward (modeling_owlv2.py:410) ← run.py:28 in main"; "" when the profile tells neither."""
    return CALLED_FROM.join(part for part in (row["site"]["model_frame"], row["where"]) if part)


def where_parts(row: Json, frames: int | None = None) -> list[str]:
    """A family's or breakdown row's line of code (where_words), then the Python frames that led to it, innermost
    first: `frames` of them at most (then "…"), all when None; [] when the profile does not tell. A line that is
    a frame of the stack (below a helper many allocations share: SiteInfo.where) names the helper it called through,
    "flex_opt.py:171 in init_weight (through pytorch_backend.py:190 in allocate)", and only its callers follow."""
    where, stack = row["where"], row["site"]["stack"]
    at = stack.index(where) if where in stack else -1
    calls, helpers = stack[at + 1 :], stack[: max(at, 0)]
    shown = calls if frames is None else calls[:frames]
    line = where_words(row) + (f" (through {CALLED_FROM.join(helpers)})" if helpers else "")
    return [part for part in (line, *shown) if part] + (["…"] if len(shown) < len(calls) else [])


def hint_for(a: Json, *tables: list[Json]) -> str | None:
    """The allocator's `stack_hint`, when a row shown could name its line of code and none does: beside rows that
    show lines (from a program's source, a model's frame) "no Python frames" would read as a contradiction."""
    if not a["stack_hint"]:
        return None
    rows = [row for rows in tables for row in rows]
    if any(row["where"] or row["site"].get("model_frame") for row in rows):
        return None
    # The stack reservation and the memory allocated before the window have no line to name.
    return str(a["stack_hint"]) if any(row.get("category", "buffers") == "buffers" for row in rows) else None


# After a holder matched by shape and dtype (schema.HolderMatch): its count and bytes are exact, its buffers are not.
SHAPE_MATCH_WORDS = "matched by shape and dtype: which of that shape's buffers it keeps is not known"


def holder_text(h: Json, family: Json, quote: Callable[[str], str] = lambda path: f"`{path}`") -> str:
    """A family's holder: "held by `model.heads`: ModuleList, 24 of 24 never-freed buffers, 6 MiB (an attribute,
    made at train.py:40 in train: self.heads = nn.ModuleList())"; `quote` puts its path (and line) as the view quotes
    code."""
    said = held_by(
        quote(h["path"]),
        h["type"],
        h["count"],
        family["count"],
        h["requested_bytes"],
        h["chunk_bytes"],
        at_least=not h["all_listed"],
    )
    details = [HOLDER_KIND_WORDS.get(h["kind"]) or str(h["kind"])]
    if h["created"]:
        details.append(f"made at {quote(h['created'])}" + (f": {quote(h['created_text'])}" if h["created_text"] else ""))
    said = f"{said} ({', '.join(details)})"
    if h["match"] == "shape":
        said += f" ({SHAPE_MATCH_WORDS})"
    return said


def search_text(host: Json) -> str | None:
    """How the search for the holders went on a host, when the capture helper searched: "holders: complete, 183,204
    objects in 0.41 s; 2 never-freed buffers (1.0 MiB) held by nothing it found"."""
    search = host["holder_search"]
    if search is None:
        return None
    status = search["status"]
    if status == "failed":
        return f"holders: the search failed ({search['warning'] or 'no reason given'}); no holder is known"
    text = f"holders: {status}, {search['objects_visited']:,} objects in {search['elapsed_s']:.2f} s"
    if status == "partial":
        text += f" ({search['warning'] or 'a bound was hit'}): the holders named are true, but there may be more"
    if search["unmatched_count"]:
        unmatched = count_of(search["unmatched_count"], "never-freed buffer")
        text += f"; {unmatched} ({format_bytes(search['unmatched_bytes'])}) held by no reference it found"
    if search["ambiguous_count"]:
        text += f"; {ambiguous_text(search['ambiguous_count'], search['ambiguous_bytes'])}"
    if search["not_in_profile"]:
        listed = count_of(search["not_in_profile"], "address", "addresses")
        are = "is" if search["not_in_profile"] == 1 else "are"
        text += f"; {listed} its holders list {are} no never-freed buffer of this profile"
    return text


def ambiguous_text(count: int, nbytes: int) -> str:
    """The never-freed buffers the search named no holder for because their (shape, dtype) had more live objects than
    buffers: "3 never-freed buffers (1.5 KiB) are ambiguous: more live objects share their shape and dtype than there
    are buffers, so no holder is named"."""
    one = count == 1
    return (
        f"{count_of(count, 'never-freed buffer')} ({format_bytes(nbytes)}) {'is' if one else 'are'} ambiguous: more live"
        f" objects share {'its' if one else 'their'} shape and dtype than there are buffers, so no holder is named"
    )


def family_notes(families: list[Json]) -> list[tuple[Json, list[str]]]:
    """Each family shown that has holders or its line's text, with what to say of it: its holders, then its line."""
    notes = []
    for g in families:
        said = [holder_text(h, g) for h in g["holders"]]
        if g["where_text"]:
            said.append(f"{g['where']}: {g['where_text']}")
        if said:
            notes.append((g, said))
    return notes


def compiled_programs_text(host: Json) -> str | None:
    """A device memory profile's compiled programs, per device, apart from its buffers; None when it has none."""
    programs = host["compiled_programs"]
    if not programs:
        return None
    # On CPU a program's code is host memory: the profile gives it 0 bytes, and only its count says anything.
    each = "; ".join(
        f"{format_bytes(c['bytes'])} in {count_of(c['count'], 'program')} on {c['device']}"
        if c["bytes"]
        else f"{count_of(c['count'], 'program')} on {c['device']} (0 B)"
        for c in programs
    )
    return f"compiled programs (their code and constants, not buffers): {each}"


def balance_text(a: Json) -> str:
    """'balance +26: 27 never freed, less 1 free of a buffer from before the window', or 'balance 0' where the
    balance and the never-freed count agree."""
    balance, kept, before = a["balance"], a["never_freed_count"], a["freed_before_window_count"]
    text = f"balance {balance:+,d}"
    if balance == kept:
        return text
    if balance == kept - before:
        whose = "a buffer" if before == 1 else "buffers"
        return f"{text}: {kept:,} never freed, less {count_of(before, 'free')} of {whose} from before the window"
    return f"{text}; {kept:,} never freed"


def render_allocator(a: Json, unit: str = "step", one_moment: bool = False, live_entry: str = "buffer") -> list[str]:
    """One allocator's section; rates are per `unit` ("window" when time windows stand in for steps). A
    `one_moment`'s buffers are live at one moment: it has no allocations, frees or step ends to count; its entries
    are each a `live_entry` (its format's hint)."""
    memory_id = "" if a["memory_id"] == a["allocator"] else f" (memory id {a['memory_id']})"
    kept = tensor_and_chunks(a["never_freed_requested_bytes"], a["never_freed_bytes"])
    counts = (
        f"live at this moment: {kept} in {count_of(a['never_freed_count'], live_entry)}"
        if one_moment
        else f"allocations {a['num_allocations']:,}, deallocations {a['num_deallocations']:,} ({balance_text(a)}); "
        f"never freed {kept} in {count_of(a['never_freed_count'], 'buffer')}; "
        f"heap at {unit} ends {_growth_text(a['growth_bytes_per_step'], unit)} (all allocations in allocator chunks, "
        "fitted: not the leak rate)"
    )
    lines = [
        f"  allocator {a['allocator']}{memory_id}: {VERDICT_WORDS[a['verdict']]}",
        *([f"    {a['out_of_memory']['description']}"] if a["out_of_memory"] else []),
        f"    {a['reason']}",
        f"    {peak_text(a, unit)}",
        f"    {counts}",
    ]
    lines += [f"    {note}" for note in (a["forecast"] and a["forecast"]["description"], a["fragmentation_note"]) if note]
    lines += [f"    warning: {w}" for w in once_each(a["warnings"])]
    families, breakdown = a["families"][:TOP_ROWS], a["peak_breakdown"][:TOP_ROWS]
    if families:
        counted = "live" if one_moment else "never-freed"
        lines.append(f"    families (count and bytes: their {counted} buffers, in tensor bytes):")
        rows = [
            [
                g["kind"].replace("_", " "),
                g["label"],
                g["dtype"],
                str(g["count"]),
                tensor_and_chunks(g["requested_bytes"], g["chunk_bytes"]),
                f"{g['steps']}",
                "" if g["onset_step"] is None else str(g["onset_step"]),
                format_bytes(g["bytes_per_step"]) + f"/{unit}",
                f"{g['score']:.2f}",
                CALLED_FROM.join(where_parts(g, TEXT_FRAMES)),
            ]
            for g in families
        ]
        lines += _table(["kind", "family", "dtype", "count", "bytes", "steps", "onset", "growth", "score", "where"], rows)
        if len(a["families"]) > TOP_ROWS:
            lines.append(f"    … and {count_of(len(a['families']) - TOP_ROWS, 'more family', 'more families')} (see --json)")
        for g, said in family_notes(families):
            lines.append(f"    {g['label']}:")
            lines += [f"      {line}" for line in said]
        lines += [f"    {text}" for text in cause_texts(a["families"])]
    if breakdown:
        lines.append("    at the peak:")
        rows = [
            [
                breakdown_label(r),
                r["dtype"],
                "" if r["count"] is None else str(r["count"]),
                format_bytes(r["bytes"]),
                CALLED_FROM.join(where_parts(r, TEXT_FRAMES)),
            ]
            for r in breakdown
        ]
        lines += _table(["op shape region", "dtype", "count", "bytes", "where"], rows)
        if len(a["peak_breakdown"]) > TOP_ROWS:
            lines.append(f"    … and {count_of(len(a['peak_breakdown']) - TOP_ROWS, 'more row')} (see --json)")
    hint = hint_for(a, families, breakdown)
    if hint:
        lines.append(f"    where: {hint}")
    return lines


def aliased_text(nbytes: int) -> str:
    """What the parts of a program's whole-program bytes count twice (its parameters returned in place), or ""."""
    if not nbytes:
        return ""
    return f"; {format_bytes(nbytes)} is both a parameter and live-out (returned in place: donated)"


def render_module(summary: Json) -> str:
    """A short section for one entry of a host's `modules`."""
    at = ""
    if summary["peak_position"] is not None:
        at = f" at position {summary['peak_position']} of {summary['num_positions']} ({summary['peak_instruction']})"
    lines = [
        f"{summary['name']}: memory space {summary['memory_space']}, {summary['num_instructions']} instructions",
        f"  peak heap {format_bytes(summary['peak_heap_bytes'])}{at}",
        f"  whole program {format_bytes(summary['whole_program_bytes'])}: parameters {format_bytes(summary['parameter_bytes'])},"
        f" live-out {format_bytes(summary['live_out_bytes'])}, constants {format_bytes(summary['constant_bytes'])}"
        f"{aliased_text(summary['aliased_bytes'])} (+ thread-local {format_bytes(summary['thread_local_bytes'])})",
    ]
    for e in summary["whole_program_buffers"][:5]:
        name = e.get("label") or e["instruction"]
        alias = " (returned in place: donated)" if e.get("aliases_parameter") else ""
        lines.append(f"    {format_bytes(e['bytes']):>10}  {e['reason']:<12} {name} {e['shape']}{alias}".rstrip())
    lines.extend(f"  CHECK {format_bytes(flag['bytes'])}: {flag['message']}" for flag in summary["actionable"])
    return "\n".join(lines)


def render_modules(summaries: list[Json], detailed: int = 3) -> str:
    """All modules of a host (largest peak first): a full section for each module with something to
    check and for the `detailed` largest peaks, one line for each other; long program ids cut."""
    shown = [s for i, s in enumerate(summaries) if s["actionable"] or i < detailed]
    rest = [s for s in summaries if not any(s is t for t in shown)]
    parts = [render_module(s) for s in shown]
    if rest:
        lines = [f"{count_of(len(rest), 'more module')}, nothing to check:"]
        lines.extend(f"  {format_bytes(s['peak_heap_bytes']):>10}  {s['name']} (memory space {s['memory_space']})" for s in rest)
        parts.append("\n".join(lines))
    return short_program_ids("\n\n".join(parts))


def _growth_text(bytes_per_step: float | None, unit: str = "step") -> str:
    if bytes_per_step is None:
        return "-"
    return f"{'+' if bytes_per_step >= 0 else '-'}{format_bytes(abs(bytes_per_step))}/{unit}"


def _peak_of_capacity(row: Json) -> str:
    peak, capacity = row["peak_bytes_in_use"], row["memory_capacity_bytes"]
    if peak is None:
        return "-"
    return f"{format_bytes(peak)} of {format_bytes(capacity)}" if capacity else format_bytes(peak)


def render_overview(overview: Json) -> list[str]:
    """The pod table: '3 of 64 hosts leak', then one row per host and allocator, worst first."""
    headers = ["host", "allocator", "verdict", "leak", "heap trend", "peak", "steps from"]
    rows = [
        [
            r["host"],
            r["allocator"] or "-",
            VERDICT_WORDS.get(r["verdict"], r["verdict"]) + (" (not read)" if r["error"] else ""),
            _growth_text(r["leak_bytes_per_step"]) if r["verdict"] == LEAK else "-",
            _growth_text(r["bytes_per_step"]),
            _peak_of_capacity(r),
            (r["step_source"] or {}).get("kind", "-"),
        ]
        for r in overview["rows"]
    ]
    leaking, total = overview["num_leaking_hosts"], overview["num_hosts"]
    return [f" {leaking} of {total} hosts {'leaks' if leaking == 1 else 'leak'}", *_table(headers, rows)]


def render_report(report: Json) -> str:
    """The runs' reports. A TensorBoard run of several captures leads with its history; its captures follow,
    each verdict that capture's own."""
    report = visible_json(report)
    lines: list[str] = []
    for history in report.get("histories", []):
        lines += [*render_history(history), ""]
    in_history = {h["tb_run"] for h in report.get("histories", [])}
    for run in report["runs"]:
        tb_run = tensorboard_run(run["run"])
        what = f"capture {run['run']} (its own verdict; the history of {tb_run or 'the logdir top'} is above)"
        lines.append(f"{what if tb_run in in_history else 'run ' + run['run']}: {VERDICT_WORDS[run['verdict']]}")
        if len(run["hosts"]) > 1:
            lines += [*render_overview(queries.run_overview(run)), ""]
        for host in run["hosts"]:
            lines.append(f" host {host['host']}: {host['step_source']['description']}")
            lines += [f"  warning: {w}" for w in once_each(host["warnings"])]
            searched = search_text(host)
            if searched:
                lines.append(f"  {searched}")
            if not host["allocators"]:
                lines.append(f"  {host['reason']}")
                lines.append(f"  {host['format_hints']['record_events'].replace('`', '')}")
            unit = "window" if host["step_source"]["kind"] == "time_windows" else "step"
            for a in host["allocators"]:
                lines += render_allocator(a, unit, host["one_moment"], host["format_hints"]["live_entry"])
            lines += [f"  {line}" for line in process_memory_lines(host)]
            programs = compiled_programs_text(host)
            if programs:
                lines.append(f"  {programs}")
            if host["modules"]:
                lines.append(f"  compiled XLA programs ({count_of(len(host['modules']), 'module')}):")
                lines += ["    " + line for line in render_modules(host["modules"]).splitlines()]
            if host["cause"] is not None:
                lines.append(f"  {cause_text(host['cause'])}")
        lines.append("")
    if report["errors"]:
        lines += [f"could not read {_files(len(report['errors']))}:", *render_errors(report["errors"]), ""]
    return "\n".join(lines)


def _signed(n: float) -> str:
    return f"{'+' if n >= 0 else '-'}{format_bytes(abs(n))}"


def process_memory_lines(host: Json) -> list[str]:
    """What grows outside the allocators (the training process's and its workers' memory), beside their verdicts;
    for a host analysed without a recording of it, the one line that says how to record it."""
    p = host.get("process_memory")
    if p is None:
        return [] if host.get("error") else [NOT_RECORDED]
    steps = count_of(len(p["steps"]), "step")
    lines = [f"process memory ({p['source']}, {steps}): {VERDICT_WORDS[p['verdict']]}", f"  {p['reason']}"]
    if p["steps"]:
        rows = [["training process", "RSS", f"{_signed(p['bytes_per_step'])}/step", "yes" if p["main_grows"] else ""]]
        for w in p["workers"]:
            rows.append(
                [
                    f"worker pid {w['pid']}",
                    w["measure"].upper(),
                    f"{_signed(w['bytes_per_step'])}/step",
                    "yes" if w["grows"] else "",
                ]
            )
        lines += ["  " + row for row in _table(["process", "measure", "outside the allocators", "grows"], rows)]
    for c in p["causes"]:
        lines.append(f"  likely: {c['title']}. Fix: {c['fix']} ({c['doc']})")
    return lines


def _files(n: int) -> str:
    return count_of(n, "file")


def render_errors(errors: list[Json]) -> list[str]:
    """One line per file that could not be read (`wire.error_json`): its run and host, its path and why."""
    return [f"  {e['run']} host {e['host']}: {e['file']}: {e['reason']}" for e in errors]


def _when(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(seconds))


TIME_SOURCES = {"profile": "profile", "session_name": "folder name", "file_mtime": "file mtime"}


def render_history(history: Json) -> list[str]:
    """A TensorBoard run's captures over time: each series' verdict, its captures, and the families that grew."""
    history = visible_json(history)
    run = history["tb_run"] or "(the logdir's top)"
    lines = [
        f"history of {run}: {VERDICT_WORDS[history['verdict']]}, {count_of(history['num_captures'], 'capture')}",
        f" {history['reason']}",
    ]
    if history["errors"]:
        lines += [f" could not read {_files(len(history['errors']))}:", *render_errors(history["errors"])]
    if history["note"]:
        lines.append(f" note: {history['note']}")
    for s in history["series"]:
        rates = [
            _growth_text(s["bytes_per_hour"], "hour") if s["bytes_per_hour"] is not None else "no rate per hour",
            *([_growth_text(s["bytes_per_step"])] if s["bytes_per_step"] is not None else []),
            _growth_text(s["bytes_per_capture"], "capture"),
        ]
        lines.append(f" {s['allocator']} on {s['host']}: {VERDICT_WORDS[s['verdict']]}, {', '.join(rates)}")
        if s["time_note"]:
            lines.append(f"   times: {s['time_note']}")
        if s["unexplained"]:
            lines.append(f"   {s['unexplained']}")
        if s["cause"] is not None:
            lines.append(f"   {cause_text(s['cause'])}")
        # Within captures, a capture's heap at its start is what earlier ones left uncounted-for: not shown.
        within = s["rate_basis"] == "within_captures"
        rows = [
            [
                _when(c["time_s"]),
                c["capture"],
                TIME_SOURCES.get(c["time_source"], c["time_source"]),
                "-" if c["first_step"] is None else f"{c['first_step']}..{c['last_step']}",
                format_bytes(c["measure_bytes"]),
                *([] if within else [format_bytes(c["heap_start_bytes"])]),
                format_bytes(c["peak_heap_bytes"]),
                VERDICT_WORDS[c["verdict"]],
            ]
            for c in s["captures"]
        ]
        measured = ["kept within"] if within else ["outlives steps", "held at start"]
        headers = ["when", "capture", "time from", "steps", *measured, "peak heap", "its own verdict"]
        lines += _table(headers, rows)
        if s["families"]:
            grew = [
                [f["label"], f["where"], str(f["growing_captures"]), _growth_text(f["bytes_per_step"])] for f in s["families"]
            ]
            lines += ["   families that grew:", *_table(["family", "where", "captures", "rate"], grew)]
            culprit = s["families"][0]
            if culprit["agrees"] and len(culprit["stack"]) > 1:
                lines.append(f"   {culprit['label']}'s frames: {CALLED_FROM.join(culprit['stack'][:4])}")
    return lines
