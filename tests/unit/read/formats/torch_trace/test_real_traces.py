"""The two real PyTorch traces of ../shared/profiles/torch (see its README and licences/), with figures
counted by hand from their JSON (json.load, then counting the events)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

import tb_leakfinder
from tb_leakfinder.analyses.lifetimes import pair_events
from tb_leakfinder.model.lifetimes import FREED
from tb_leakfinder.model.memory import ALLOC, FREE
from tb_leakfinder.read.formats.torch_trace import reader

TORCH = Path(__file__).resolve().parents[5].parent / "shared" / "profiles" / "torch"
RESNET = TORCH / "kineto_resnet50_w4" / "worker0.1623212756351.pt.trace.json.gz"  # pytorch/kineto, BSD-3
QWEN = TORCH / "tracelens_qwen_h100" / "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"  # AMD-AGI/TraceLens, MIT

pytestmark = pytest.mark.skipif(not RESNET.exists() or not QWEN.exists(), reason="the shared real traces are absent")


def _counts(profile):
    events = profile.events
    out = {}
    for a, name in enumerate(events.allocator_names):
        mine = events.take(events.allocator == a)
        pairing = pair_events(mine, profile.steps)
        freed = int((pairing.buffers.status == FREED).sum())
        out[name] = (int((mine.kind == ALLOC).sum()), int((mine.kind == FREE).sum()), freed)
    return out


def test_resnet_old_form():
    profile = reader.read_host(str(RESNET), "worker0")
    assert len(profile.events) == 10_980
    # 2,700 CPU events and 8,280 CUDA ones, half of each allocations: all paired.
    assert _counts(profile) == {"cpu": (1350, 1350, 1350), "cuda:0": (4140, 4140, 4140)}
    assert profile.steps.step_num.tolist() == [5, 6, 7, 8, 9, 10]
    assert "10980 [memory] events carry no address" in profile.warnings[0]
    assert profile.duration_ps == 939_328_000_000  # ts 1623212388426602 to 1623212389365930 µs


def test_qwen_new_form_peak_is_its_total_allocated():
    trace = json.loads(gzip.decompress(QWEN.read_bytes()))
    memory = [e["args"] for e in trace["traceEvents"] if e.get("name") == "[memory]"]
    totals = [args["Total Allocated"] for args in memory if args["Device Type"] == 1]
    assert max(totals) == 2_088_508_416
    profile = reader.read_host(str(QWEN), "qwen")
    assert profile.warnings == []
    assert len(profile.events) == 2_450
    assert _counts(profile) == {"cpu": (100, 100, 100), "cuda:0": (1125, 1125, 1125)}
    cuda = profile.events.allocator == profile.events.allocator_names.index("cuda:0")
    assert int(np.max(profile.events.heap_bytes[cuda])) == max(totals)
    assert profile.steps.step_num.tolist() == [6]
    assert np.count_nonzero(profile.events.op) > 0 and len(profile.spans) > 2000


@pytest.mark.parametrize("path", [RESNET, QWEN])
def test_analyze_a_real_trace_folder(path):
    report = tb_leakfinder.analyze(str(path.parent), cache=False)
    (run,) = report["runs"]
    (host,) = run["hosts"]
    assert sorted(a["memory_id"] for a in host["allocators"]) == ["cpu", "cuda:0"]
    assert "error" not in host and run["verdict"] != "error"
    if path == QWEN:
        (cuda,) = [a for a in host["allocators"] if a["memory_id"] == "cuda:0"]
        assert cuda["peak_bytes_in_use"] == 2_088_508_416


def test_qwen_buffers_name_the_model_layer_below_the_harness_line():
    """The trace's own nesting: the harness's one line (text_base_model.py:28) around Qwen2's modules, each an
    `nn.Module: <Class>_<k>` event around its forward (the MLP's act(gate) * up is aten::mul [16,559,2816])."""
    (run,) = tb_leakfinder.analyze(str(QWEN.parent), cache=False)["runs"]
    (cuda,) = [a for a in run["hosts"][0]["allocators"] if a["memory_id"] == "cuda:0"]
    rows = {(r["op"], r["shape"]): r for r in cuda["peak_breakdown"]}
    mlp = rows["aten::mul", "BFloat16[16,559,2816], BFloat16[16,559,2816]"]
    assert mlp["where"] == "text_base_model.py:28 in run_on_input"
    assert mlp["site"]["model_frame"] == "Qwen2MLP.forward (modeling_qwen2.py:56)"
    # torch.nn's own modules are model frames too; a module function called by a forward has no class.
    assert rows["aten::silu", "BFloat16[16,559,2816]"]["site"]["model_frame"] == "SiLU.forward (activation.py:431)"
    rotary = rows["aten::add", "BFloat16[16,16,559,64], BFloat16[16,16,559,64]"]
    assert rotary["site"]["model_frame"] == "apply_rotary_pos_emb (modeling_qwen2.py:68)"
    # Qwen2RotaryEmbedding.forward runs under @torch.no_grad(), whose wrapper lies between the module and it.
    rotary_embedding = rows["aten::_to_copy", "float[1,559,64]"]["site"]["model_frame"]
    assert rotary_embedding == "Qwen2RotaryEmbedding.forward (modeling_qwen2.py:323)"
