"""Who keeps each family's never-freed buffers alive: the holders the capture helper found inside the training process
(its companion file, model/recordings.py), matched to the allocator's never-freed buffers by address, and so to the
families; and the text of the lines the report names, from the same file.

A holder lists the addresses of the never-freed buffers it keeps, as the process saw them when the window closed;
a never-freed buffer of the profile is live at that address then too, so an equal address is the same buffer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tb_leakfinder.analyses.frames import base_name
from tb_leakfinder.analyses.suspects import Suspects
from tb_leakfinder.model.lifetimes import NEVER_FREED, Buffers
from tb_leakfinder.model.recordings import HolderSearchRecord, Recordings
from tb_leakfinder.model.sites import SiteInfo

# Holders listed per family, most buffers first: a family kept by more references is still read in a glance, and the
# host's `HolderStatus.num_holders` counts them all.
MAX_FAMILY_HOLDERS = 20


@dataclass
class HolderResult:
    """One reference that keeps some of a family's never-freed buffers alive (CONTRIBUTING's glossary: holder)."""

    path: str  # the access path in the user's terms: "model.heads", "metrics['loss_map']", "total"
    kind: str  # model/recordings.HOLDER_KINDS
    type_name: str  # the holder's type: "ModuleList"
    created: str  # where the holder was made, "train.py:40 in train"; "" when not known
    created_text: str  # that line's text, from the companion file; "" when it has none
    count: int  # the family's never-freed buffers it keeps
    requested_bytes: int  # their tensor bytes
    chunk_bytes: int  # their chunks
    all_listed: bool  # the companion file listed every buffer it keeps; else `count` is a floor (its size bound)
    # model/recordings.HOLDER_MATCHES: SHAPE when its buffers were matched by (shape, dtype), so the addresses it lists
    # are some of that shape's buffers, not known to be the ones it keeps.
    match: str


@dataclass
class HolderStatus:
    """How the search for holders went, for one host: what the views say beside the holders ("partial")."""

    status: str  # model/recordings: COMPLETE, PARTIAL or FAILED
    warning: str  # why it is partial or failed; "" when complete
    objects_visited: int
    elapsed_s: float
    num_holders: int  # holders the capture helper found
    # Never-freed buffers of the window held by no reference it found: the helper's unmatched less the ambiguous,
    # which it counts among them, so that a status line says each buffer once.
    unmatched_count: int
    unmatched_bytes: int
    ambiguous_count: int  # the ones of a (shape, dtype) more live objects have than buffers: no holder named
    ambiguous_bytes: int
    not_in_profile: int  # addresses the holders list that are no never-freed buffer of this profile


def family_holders(
    buffers: Buffers, suspects: Suspects, search: HolderSearchRecord, sources: dict[str, str]
) -> list[list[HolderResult]]:
    """Each family's holders (in the order of `suspects.families`), most buffers first, at most MAX_FAMILY_HOLDERS."""
    found: list[list[HolderResult]] = [[] for _ in suspects.families]
    never = np.flatnonzero(buffers.status == NEVER_FREED)
    if len(never) == 0 or not search.holders:
        return found
    order = np.argsort(buffers.addr[never], kind="stable")
    rows, addresses = never[order], buffers.addr[never][order]
    for record in search.holders:
        listed = np.unique(np.array(record.addresses, np.uint64))
        at = np.minimum(np.searchsorted(addresses, listed), len(addresses) - 1)
        kept = rows[at[addresses[at] == listed]]
        family = suspects.never_freed_family[kept]
        kept, family = kept[family >= 0], family[family >= 0]
        for f in np.unique(family).tolist():
            mine = kept[family == f]
            found[f].append(
                HolderResult(
                    path=record.path,
                    kind=record.kind,
                    type_name=record.type_name,
                    created=record.created,
                    created_text=line_text(record.created, sources),
                    count=len(mine),
                    requested_bytes=int(buffers.requested_bytes[mine].sum()),
                    chunk_bytes=int(buffers.chunk_bytes[mine].sum()),
                    all_listed=len(record.addresses) >= record.count,
                    match=record.match,
                )
            )
    for holders in found:
        holders.sort(key=lambda h: (-h.count, -h.chunk_bytes, h.path))
        del holders[MAX_FAMILY_HOLDERS:]
    return found


def holder_status(recordings: Recordings, matched: Sequence[np.ndarray]) -> HolderStatus | None:
    """The host's search for holders, None when the helper did not search; `matched`: each allocator's never-freed
    buffers' addresses (`never_freed_addresses`)."""
    search = recordings.holders
    if search is None:
        return None
    listed = np.unique(np.array([a for h in search.holders for a in h.addresses], np.uint64))
    in_profile = np.zeros(len(listed), bool)
    for addresses in matched:
        in_profile |= np.isin(listed, addresses)
    return HolderStatus(
        status=search.status,
        warning=search.warning,
        objects_visited=search.objects_visited,
        elapsed_s=search.elapsed_s,
        num_holders=len(search.holders),
        unmatched_count=max(0, search.unmatched_count - search.ambiguous_count),
        unmatched_bytes=max(0, search.unmatched_bytes - search.ambiguous_bytes),
        ambiguous_count=search.ambiguous_count,
        ambiguous_bytes=search.ambiguous_bytes,
        not_in_profile=int(np.count_nonzero(~in_profile)),
    )


def never_freed_addresses(buffers: Buffers) -> np.ndarray:
    return np.asarray(buffers.addr[buffers.status == NEVER_FREED], np.uint64)


def family_where_texts(suspects: Suspects, sites: Sequence[SiteInfo], sources: dict[str, str]) -> list[str]:
    """The text of each family's line of code (`SiteInfo.where`), from the companion file's sources; "" where it has none."""
    return [line_text(sites[f.site].where if 0 <= f.site < len(sites) else "", sources) for f in suspects.families]


def line_text(where: str, sources: dict[str, str]) -> str:
    """The text of the line `where` names ("train.py:134 in train_step", "/src/train.py:134", "model.py:57"), from
    `sources` ("/home/me/train.py:134" -> its text): by the whole path when `where` has one, else by the file's base
    name when only one of the files recorded has that name and line. "" when none is known."""
    place = where.split(" in ", 1)[0].strip()
    file, _, line = place.rpartition(":")
    if not file or not line.isdecimal():
        return ""
    if place in sources:
        return sources[place]
    wanted = f"{base_name(file)}:{int(line)}"
    texts = {text for key, text in sources.items() if _base_line(key) == wanted}
    return texts.pop() if len(texts) == 1 else ""


def _base_line(key: str) -> str:
    file, _, line = key.rpartition(":")
    return f"{base_name(file)}:{int(line)}" if file and line.isdecimal() else ""
