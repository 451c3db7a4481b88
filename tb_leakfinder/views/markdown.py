"""A comparison as Markdown, fit for a pull-request comment."""

from __future__ import annotations

from tb_leakfinder.analyses.words import format_bytes
from tb_leakfinder.report import Json
from tb_leakfinder.views.terminal import visible_json

VERDICT = {"leak": "🔴 leak", "no_leak": "🟢 no leak", "inconclusive": "⚪ inconclusive", None: "—"}


def _cell(text: str) -> str:
    """Profile strings are data: keep them from breaking or styling the table (their newlines are escaped already)."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("`", "'")


def _signed(n: float) -> str:
    return ("+" if n > 0 else "") + format_bytes(n)


def render_comparison(c: Json) -> str:
    c = visible_json(c)
    lines = [
        f"## tb-leakfinder: `{_cell(c['run_a'])}` → `{_cell(c['run_b'])}`",
        "",
        f"**{'❌ regression' if c['regression'] else '✅ no new leak'}** — "
        f"A: {VERDICT[c['verdict_a']]}, B: {VERDICT[c['verdict_b']]}",
        "",
    ]
    lines += [f"- {_cell(r)}" for r in c["regressions"]]
    for h in c["hosts"]:
        for alloc in h["allocators"]:
            lines += [
                "",
                f"### {_cell(h['host_b'])} · {_cell(alloc['name_b'] or alloc['name_a'] or '')}",
                "",
                "| | A | B | change |",
                "|---|---:|---:|---:|",
            ]
            for label, key in (
                ("peak in use", "peak_bytes_in_use"),
                ("never freed", "never_freed_bytes"),
                ("heap at step ends, per step", "growth_bytes_per_step"),
            ):
                d = alloc[key]
                lines.append(f"| {label} | {format_bytes(d['a'])} | {format_bytes(d['b'])} | {_signed(d['delta'])} |")
            changed = [g for g in alloc["groups"] if g["status"] != "unchanged"]
            if changed:
                lines += [
                    "",
                    "| status | family | dtype | A | B | A per step | B per step | B grows from |",
                    "|---|---|---|---:|---:|---:|---:|---:|",
                ]
                lines += [
                    f"| {g['status']} | `{_cell(g['label'])}` | {_cell(g['dtype'])} | "
                    f"{format_bytes(g['bytes_a'])} | {format_bytes(g['bytes_b'])} | "
                    f"{format_bytes(g['bytes_per_step_a'])} | {format_bytes(g['bytes_per_step_b'])} | "
                    f"{'' if g['onset_step_b'] is None else 'step ' + str(g['onset_step_b'])} |"
                    for g in changed
                ]
        for m in h["modules"]:
            added = ", ".join(
                f"`{_cell(w['instruction'])}` ({w['reason']}, {format_bytes(w['bytes'])})"
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
