"""Holders matched to families by the addresses of their never-freed buffers, and the text of the lines named."""

from __future__ import annotations

from tb_leakfinder.analyses.holders import MAX_FAMILY_HOLDERS, line_text
from tb_leakfinder.analyses.pipeline import analyze_host
from tb_leakfinder.analyses.suspects import GROWING
from tb_leakfinder.model.memory import ALLOC, FREE
from tb_leakfinder.model.recordings import ADDRESS, COMPLETE, PARTIAL, SHAPE, HolderRecord, HolderSearchRecord, Recordings
from tests.support.columns import host_profile, memory_events, steps

STEPS = 12
STEP_PS = 1_000_000
KEPT = 4096  # each step's kept Mul output
CACHED = 1024  # the two Cat buffers of step 0
KEPT_BASE, TEMP_BASE, CAT_BASE = 0x7000_0000, 0x9000_0000, 0xA000_0000


def _loop() -> tuple[list[int], list[int], object]:
    """A loop that keeps one Mul output a step (a leak) and two Cat buffers of its first step, and frees a Relu
    temporary each step: (the Mul addresses, the Cat addresses, the profile)."""
    times, kinds, addrs, sizes, ops = [], [], [], [], []
    kept = [KEPT_BASE + n * 0x10000 for n in range(STEPS)]
    cached = [CAT_BASE, CAT_BASE + 0x10000]
    for n in range(STEPS):
        t = n * STEP_PS
        for at, kind, addr, size, op in (
            (t + 10, ALLOC, TEMP_BASE + n, 256, "Relu"),
            (t + 20, ALLOC, kept[n], KEPT, "Mul"),
            (t + 30, FREE, TEMP_BASE + n, 256, "Relu"),
        ):
            times.append(at), kinds.append(kind), addrs.append(addr), sizes.append(size), ops.append(op)
    for k, addr in enumerate(cached):
        times.append(40 + k), kinds.append(ALLOC), addrs.append(addr), sizes.append(CACHED), ops.append("Cat")
    events = memory_events(times, kinds, addrs, sizes, op=ops, shape="[32,32]", region="output")
    marks = steps(*((n, n * STEP_PS, (n + 1) * STEP_PS - 1) for n in range(STEPS)))
    return kept, cached, host_profile(events, marks)


def _search(*holders: HolderRecord, status: str = COMPLETE, warning: str = "") -> Recordings:
    return Recordings(1, "host0", 1, "torch", HolderSearchRecord(status, warning, 500, 0.2, list(holders), 1, 256))


def _by_op(analysis):
    (a,) = analysis.allocators
    strings = a.events.strings
    return a, {strings[f.op]: (f, a.holders[i]) for i, f in enumerate(a.suspects.families)}


def test_each_holder_lands_on_the_families_of_the_buffers_it_keeps():
    kept, cached, profile = _loop()
    half = kept[::2]
    profile.recordings = _search(
        HolderRecord("model.heads", "attribute", "ModuleList", "train.py:40 in train", kept, STEPS, STEPS * KEPT),
        HolderRecord("memo", "default_argument", "dict", "", [*half, *cached, 0xDEAD], 9, 0),
    )
    analysis = analyze_host(profile)
    a, families = _by_op(analysis)
    mul, mul_holders = families["Mul"]
    assert (mul.kind, mul.count) == (GROWING, STEPS)
    assert [(h.path, h.count, h.chunk_bytes) for h in mul_holders] == [
        ("model.heads", STEPS, STEPS * KEPT),
        ("memo", len(half), len(half) * KEPT),
    ]
    assert mul_holders[0].created == "train.py:40 in train"
    assert mul_holders[0].all_listed and mul_holders[1].all_listed
    cat, cat_holders = families["Cat"]
    assert cat.count == len(cached)
    assert [(h.path, h.kind, h.type_name, h.count, h.requested_bytes) for h in cat_holders] == [
        ("memo", "default_argument", "dict", 2, 2 * CACHED)
    ]
    status = analysis.holder_status
    assert status is not None
    assert (status.status, status.num_holders, status.not_in_profile) == (COMPLETE, 2, 1)
    assert (status.unmatched_count, status.unmatched_bytes, status.objects_visited) == (1, 256, 500)
    # The leak's verdict names its top family's first holder.
    assert a.verdict.reason.endswith(
        f"Held by `model.heads`: ModuleList, {STEPS} of {STEPS} never-freed buffers, {STEPS * KEPT // 1024} KiB."
    )


def test_a_holder_listing_fewer_buffers_than_it_keeps_is_a_floor_and_a_partial_search_says_so():
    kept, _, profile = _loop()
    profile.recordings = _search(
        HolderRecord("history", "frame_local", "list", "", kept[:5], 40, 0), status=PARTIAL, warning="the 2 s bound was hit"
    )
    a, families = _by_op(analyze_host(profile))
    (h,) = families["Mul"][1]
    assert (h.count, h.all_listed) == (5, False)
    assert "held by `history`: list, at least 5 of 12 never-freed buffers" in a.verdict.reason.lower()
    assert a.verdict.reason.endswith("(the search for holders was partial: the 2 s bound was hit).")


def test_a_holder_matched_by_shape_says_so_and_the_status_carries_the_ambiguous_buffers():
    kept, cached, profile = _loop()
    search = HolderSearchRecord(COMPLETE, "", 500, 0.2, unmatched_count=4, unmatched_bytes=4 * KEPT)
    search.holders = [
        HolderRecord("history", "frame_local", "list", "", kept[:8], 8, 8 * KEPT, match=SHAPE),
        HolderRecord("memo", "default_argument", "dict", "", cached, 2, 2 * CACHED),
    ]
    search.ambiguous_count, search.ambiguous_bytes = 4, 4 * KEPT  # kept[8:]: more tensors of [32,32] than buffers
    profile.recordings = Recordings(1, "host0", 1, "tensorflow", search)
    analysis = analyze_host(profile)
    _, families = _by_op(analysis)
    assert [(h.path, h.count, h.match) for h in families["Mul"][1]] == [("history", 8, SHAPE)]
    assert [(h.path, h.count, h.match) for h in families["Cat"][1]] == [("memo", 2, ADDRESS)]
    status = analysis.holder_status
    assert status is not None
    # The helper counts the ambiguous among the unmatched; the status says each buffer once: none is held by no
    # reference found, 4 are ambiguous.
    assert (status.unmatched_count, status.unmatched_bytes) == (0, 0)
    assert (status.ambiguous_count, status.ambiguous_bytes) == (4, 4 * KEPT)


def test_without_a_companion_nothing_changes_and_without_the_search_no_status():
    _, _, plain = _loop()
    before = analyze_host(plain)
    assert before.holder_status is None
    assert all(a.holders == [] and a.where_texts == [] for a in before.allocators)
    _, _, profile = _loop()
    profile.recordings = Recordings(1, "host0", 1, "torch", None, None, {})
    after = analyze_host(profile)
    assert after.holder_status is None
    assert after.allocators[0].verdict == before.allocators[0].verdict
    assert after.allocators[0].holders == []
    assert after.allocators[0].where_texts == [""] * len(after.allocators[0].suspects.families)


def test_a_family_lists_its_holders_that_keep_the_most_and_the_status_counts_them_all():
    kept, _, profile = _loop()
    each = [HolderRecord(f"alias_{n}", "global", "Tensor", "", [kept[n]], 1, KEPT) for n in range(STEPS)]
    many = [HolderRecord(f"list_{k}", "list", "list", "", kept[:2], 2, 2 * KEPT) for k in range(MAX_FAMILY_HOLDERS)]
    profile.recordings = _search(*each, *many)
    analysis = analyze_host(profile)
    _, families = _by_op(analysis)
    listed = families["Mul"][1]
    assert [h.path for h in listed] == sorted(f"list_{k}" for k in range(MAX_FAMILY_HOLDERS))  # 2 buffers each, by path
    assert analysis.holder_status is not None and analysis.holder_status.num_holders == STEPS + MAX_FAMILY_HOLDERS


def test_a_lines_text_by_its_whole_path_or_by_a_base_name_only_one_file_has():
    sources = {
        "/home/me/train.py:134": "loss = loss_fn(model(x), y)",
        "/home/me/model.py:57": "return x @ w",
        "/other/model.py:57": "y = x + 1",
        "/home/me/data.py:9": "batch = next(it)",
        "/copy/data.py:9": "batch = next(it)",
    }
    assert line_text("train.py:134 in train_step", sources) == "loss = loss_fn(model(x), y)"
    assert line_text("/home/me/model.py:57", sources) == "return x @ w"
    assert line_text("model.py:57", sources) == ""  # two files of that name: which is unknown
    assert line_text("data.py:9 in load", sources) == "batch = next(it)"  # two files, one text
    assert line_text("train.py:135 in train_step", sources) == ""
    assert line_text("", sources) == line_text("train.py", sources) == line_text("train.py:x1", sources) == ""
