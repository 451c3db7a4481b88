"""A comparison, or a report, as Markdown, fit for a pull-request comment."""

from __future__ import annotations

from tb_leakfinder.analyses.words import count_of, format_bytes, tensor_and_chunks
from tb_leakfinder.engine.history import tensorboard_run
from tb_leakfinder.views.terminal import visible_json
from tb_leakfinder.views.text import (
    CALLED_FROM,
    CAUSE_TITLES,
    CAUSES_PAGE,
    TOP_ROWS,
    breakdown_label,
    compiled_programs_text,
    distinct_causes,
    family_notes,
    hint_for,
    holder_text,
    peak_text,
    process_memory_lines,
    search_text,
    where_parts,
)
from tb_leakfinder.wire import Json

VERDICT = {"leak": "🔴 leak", "no_leak": "🟢 no leak", "inconclusive": "⚪ inconclusive", None: "—"}


def _cell(text: str) -> str:
    """Profile strings are data: keep them from breaking or styling the table (their newlines are escaped already)."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("`", "'")


def _code(text: str) -> str:
    """A profile string as a code span (an underscore of `__init__.py` is not emphasis)."""
    return f"`{_cell(text)}`" if text else ""


def _where(row: Json) -> str:
    """The row's line of code and every Python frame that led to it."""
    return CALLED_FROM.join(map(_code, where_parts(row)))


def _signed(n: float) -> str:
    return ("+" if n > 0 else "") + format_bytes(n)


def render_comparison(c: Json) -> str:
    c = visible_json(c)
    # An out-of-memory error leads, whatever the verdicts ("B ran out of memory"), and is never "no new leak".
    ooms = [
        f"**❌ {side.upper()} ran out of memory:** {_cell(alloc[f'out_of_memory_{side}'])}"
        for h in c["hosts"]
        for alloc in h["allocators"]
        for side in ("a", "b")
        if alloc[f"out_of_memory_{side}"]
    ]
    verdicts = f"A: {VERDICT[c['verdict_a']]}, B: {VERDICT[c['verdict_b']]}"
    lines = [f"## tb-leakfinder: `{_cell(c['run_a'])}` → `{_cell(c['run_b'])}`", ""]
    lines += [line for oom in ooms for line in (oom, "")]
    if c["regression"] or not ooms:
        lines += [f"**{'❌ regression' if c['regression'] else '✅ no new leak'}** — {verdicts}", ""]
    else:
        lines += [verdicts, ""]
    lines += [f"- {_cell(r)}" for r in c["regressions"]]
    for h in c["hosts"]:
        for alloc in h["allocators"]:
            lines += [
                "",
                f"### {_cell(h['host_b'])} · {_cell(alloc['allocator_b'] or alloc['allocator_a'] or '')}",
                "",
                "| | A | B | change |",
                "|---|---:|---:|---:|",
            ]
            for label, key in (
                ("peak in use", "peak_bytes_in_use"),
                ("never freed (tensor bytes)", "never_freed_requested_bytes"),
                ("heap at step ends, per step", "growth_bytes_per_step"),
            ):
                d = alloc[key]
                lines.append(f"| {label} | {format_bytes(d['a'])} | {format_bytes(d['b'])} | {_signed(d['delta'])} |")
            changed = [g for g in alloc["families"] if g["status"] != "unchanged"]
            if changed:
                lines += [
                    "",
                    "| status | family | dtype | A | B | A per step | B per step | B grows from |",
                    "|---|---|---|---:|---:|---:|---:|---:|",
                ]
                lines += [
                    f"| {g['status']} | `{_cell(g['label'])}` | {_cell(g['dtype'])} | "
                    f"{format_bytes(g['requested_bytes_a'])} | {format_bytes(g['requested_bytes_b'])} | "
                    f"{format_bytes(g['bytes_per_step_a'])} | {format_bytes(g['bytes_per_step_b'])} | "
                    f"{'' if g['onset_step_b'] is None else 'step ' + str(g['onset_step_b'])} |"
                    for g in changed
                ]
        for m in h["modules"]:
            added = ", ".join(
                f"`{_cell(w['instruction'])}` ({w['reason'].replace('_', '-')}, {format_bytes(w['bytes'])})"
                for w in m["whole_program_buffers_added"]
            )
            lines += [
                "",
                f"### module `{_cell(m['name'])}`: peak {_signed(m['peak_heap_bytes']['delta'])}, "
                f"live-out {_signed(m['live_out_bytes']['delta'])}",
            ]
            if added:
                lines.append(f"whole-program buffers added: {added}")
    return "\n".join(lines) + "\n"


def _breakdown_cell(row: Json) -> str:
    """Buffers by their op, shape and region (profile strings), the stack and the rest by their names."""
    label = breakdown_label(row)
    return _code(label) if row["category"] == "buffers" else label


def _more(rows: list[Json]) -> list[str]:
    # After a blank line: a line right below a table would be read as one more row.
    return ["", f"… and {len(rows) - TOP_ROWS} more (see --json)"] if len(rows) > TOP_ROWS else []


def family_notes_markdown(families: list[Json]) -> list[str]:
    """A bullet per family shown with holders or its line's text: who keeps its buffers, and the line's code."""
    lines = []
    for g, _ in family_notes(families):
        said = [holder_text(h, g, _code) for h in g["holders"]]
        if g["where_text"]:
            said.append(f"{_code(g['where'])}: {_code(g['where_text'])}")
        lines.append(f"- {_code(g['label'])}: " + "; ".join(said))
    return lines


def render_allocator(a: Json, unit: str = "step") -> list[str]:
    """One allocator: its verdict, its op families and what was live at the peak, each row with its line of code."""
    families, breakdown = a["families"][:TOP_ROWS], a["peak_breakdown"][:TOP_ROWS]
    lines = [_cell(a["reason"]), "", _cell(peak_text(a))]
    if a["out_of_memory"]:
        lines[:0] = [f"**{_cell(a['out_of_memory']['description'])}**", ""]
    if families:
        lines += [
            "",
            f"| kind | family | dtype | count | bytes | growth per {unit} | where |",
            "|---|---|---|---:|---:|---:|---|",
        ]
        lines += [
            f"| {g['kind'].replace('_', ' ')} | {_code(g['label'])} | {_cell(g['dtype'])} | {g['count']} | "
            f"{tensor_and_chunks(g['requested_bytes'], g['chunk_bytes'])} | "
            f"{format_bytes(g['bytes_per_step'])} | {_where(g)} |"
            for g in families
        ]
        lines += _more(a["families"])
        notes = family_notes_markdown(families)
        if notes:
            lines += ["", *notes]
        causes = [
            f"- **likely cause: {CAUSE_TITLES.get(cause, cause)}** ({_cell(evidence)}) — fix: {fix}, see "
            f"[{CAUSES_PAGE}#{cause}]({CAUSES_PAGE}#{cause})"
            for cause, evidence, fix in distinct_causes(a["families"])
        ]
        lines += ["", *causes] if causes else []
    if breakdown:
        lines += ["", "At the peak:", "", "| op shape region | dtype | count | bytes | where |", "|---|---|---:|---:|---|"]
        lines += [
            f"| {_breakdown_cell(r)} | {_cell(r['dtype'])} | {'' if r['count'] is None else r['count']} | "
            f"{format_bytes(r['bytes'])} | {_where(r)} |"
            for r in breakdown
        ]
        lines += _more(a["peak_breakdown"])
    hint = hint_for(a, families, breakdown)
    if hint:
        lines += ["", f"> where: {hint}"]
    return lines


def _cause_line(cause: Json, where: str = "") -> str:
    """A likely cause as a list item, `where` (a history's series) leading it."""
    title, page = CAUSE_TITLES.get(cause["id"], cause["id"]), f"{CAUSES_PAGE}#{cause['id']}"
    lead = f"{where}: " if where else ""
    return f"- {lead}**likely cause: {title}** ({_cell(cause['evidence'])}) — fix: {cause['fix']}, see [{page}]({page})"


def _process_memory(host: Json) -> list[str]:
    p = host.get("process_memory")
    if p is None:
        return [] if host.get("error") else ["", f"_{_cell(process_memory_lines(host)[0])}_"]
    lines = ["", f"#### {_cell(host['host'])} · process memory: {VERDICT[p['verdict']]}", "", _cell(p["reason"]), ""]
    lines += ["| process | measure | rate per step | grows |", "|---|---|---:|---|"]
    grows = "yes" if p["main_grows"] else ""
    lines.append(f"| training process | RSS | {_signed(p['bytes_per_step'])} outside the allocators | {grows} |")
    lines += [
        f"| worker pid {w['pid']} | {w['measure'].upper()} | {_signed(w['bytes_per_step'])} | {'yes' if w['grows'] else ''} |"
        for w in p["workers"]
    ]
    lines += [f"- likely: {_cell(c['title'])}. Fix: {_cell(c['fix'])} ([{c['doc']}]({c['doc']}))" for c in p["causes"]]
    return lines


def render_report(report: Json) -> str:
    """Each host's allocators of each run, under their verdicts; a run of several captures leads with its history,
    and each capture's verdict reads as its own."""
    report = visible_json(report)
    lines: list[str] = []
    histories = {h["tb_run"]: h for h in report.get("histories", [])}
    for h in histories.values():
        name = _cell(h["tb_run"]) or "(the logdir top)"
        captures = count_of(h["num_captures"], "capture")
        lines += [f"## tb-leakfinder: history of `{name}` ({captures}): {VERDICT[h['verdict']]}", ""]
        lines += [_cell(h["reason"]), ""]
        causes = [_cause_line(s["cause"], f"{_cell(s['allocator'])} on {_cell(s['host'])}") for s in h["series"] if s["cause"]]
        lines += [*causes, ""] if causes else []
    for run in report["runs"]:
        what = "capture" if tensorboard_run(run["run"]) in histories else "tb-leakfinder:"
        own = " (on its own)" if what == "capture" else ""
        lines += [f"## {what} `{_cell(run['run'])}`{own}: {VERDICT[run['verdict']]}", ""]
        for host in run["hosts"]:
            unit = "window" if host["step_source"]["kind"] == "time_windows" else "step"
            lines += [f"### {_cell(host['host'])}: {VERDICT[host['verdict']]}", "", _cell(host["step_source"]["description"])]
            searched = search_text(host)
            if searched:
                lines += ["", _cell(searched)]
            if not host["allocators"]:
                lines += ["", _cell(host["reason"]), "", f"> {_cell(host['format_hints']['record_events'])}"]
            for a in host["allocators"]:
                lines += ["", f"#### {_cell(host['host'])} · {_cell(a['allocator'])}: {VERDICT[a['verdict']]}", ""]
                lines += render_allocator(a, unit)
            lines += _process_memory(host)
            programs = compiled_programs_text(host)
            if programs:
                lines += ["", _cell(programs)]
            if host["cause"] is not None:
                lines += ["", _cause_line(host["cause"])]
            lines.append("")
    return "\n".join(lines)
