"""Which Python frames are the user's, from the Python tracer's names."""

from __future__ import annotations

from tb_leakfinder.analyses.frames import MAX_FRAMES, model_frame, parse_frame, telling_frames, user_frames


def test_python_frames_parse_and_c_functions_do_not():
    assert parse_frame("$train.py:42 train_step") == ("train.py", 42, "train_step")
    assert parse_frame("$core.py:1713 <lambda>") == ("core.py", 1713, "<lambda>")
    assert parse_frame("$builtins isinstance") is None
    assert parse_frame("$jaxlib.utils safe_map") is None
    assert parse_frame("PjitFunction(f)") is None


def test_the_frameworks_frames_are_skipped_innermost_first():
    # As the real JAX GPU profile's stack of a jnp.ones call (innermost first), under the user's loop.
    stack = [
        "$dispatch.py:87 apply_primitive",
        "$core.py:1180 process_primitive",
        "$builtins isinstance",
        "$lax.py:3378 full",
        "$array_creation.py:98 ones",
        "$generate_gemm_trace.py:31 run_gemms",
        "$train.py:88 main",
    ]
    assert user_frames(stack) == ("generate_gemm_trace.py:31 in run_gemms", "train.py:88 in main")


def test_a_common_file_name_is_the_users_outside_the_framework_and_the_frameworks_inside_it():
    # model.py is also a Keras module: at the top it is the user's, below a framework frame it is Keras'.
    assert user_frames(["$model.py:57 loss_fn", "$train.py:88 main"]) == ("model.py:57 in loss_fn", "train.py:88 in main")
    inside = ["$model.py:300 call", "$layer.py:800 __call__", "$my_net.py:10 forward", "$train.py:88 main"]
    assert user_frames(inside) == ("my_net.py:10 in forward", "train.py:88 in main")


def test_files_the_programs_name_as_their_source_are_the_users():
    # A user's own core.py (a framework name) counts when the profile's HLO names it as a source.
    assert user_frames(["$core.py:12 step", "$run_me.py:3 main"]) == ("run_me.py:3 in main",)
    assert user_frames(["$core.py:12 step", "$run_me.py:3 main"], {"core.py"}) == ("core.py:12 in step", "run_me.py:3 in main")


def test_whole_paths_are_judged_by_where_they_lie():
    stack = [
        "$/usr/lib/python3.11/site-packages/torch/nn/modules/module.py:1501 _call_impl",
        "$/usr/lib/python3.11/threading.py:975 run",
        "$/home/me/project/model.py:20 forward",
    ]
    assert user_frames(stack) == ("model.py:20 in forward",)


def test_paths_relative_to_an_import_root_are_judged_by_their_package():
    # As PyTorch's tracer names them (the real Qwen trace): the frameworks' and the standard library's packages are
    # skipped, the user's own packages and scripts kept.
    stack = [
        "$torch/nn/modules/linear.py:124 forward",
        "$torch/nn/modules/module.py:1743 _call_impl",
        "$transformers/models/qwen2/modeling_qwen2.py:56 forward",
        "$concurrent/futures/thread.py:58 run",
        "$my_project/layers/attention.py:12 forward",
        "$train.py:30 main",
    ]
    assert user_frames(stack) == ("attention.py:12 in forward", "train.py:30 in main")


def test_at_most_max_frames_are_kept_innermost_first():
    stack = [f"$mine_{k}.py:{k} f{k}" for k in range(20)]
    kept = user_frames(stack)
    assert len(kept) == MAX_FRAMES and kept[0] == "mine_0.py:0 in f0"


def test_the_capture_helpers_own_frames_and_keras_trainer_are_skipped():
    stack = ["$leak_capture.py:333 step", "$keras_callback.py:53 on_train_batch_begin", "$trainer.py:764 __next__"]
    assert user_frames(stack) == ()


def test_windows_paths_are_frames_judged_by_where_they_lie():
    # A drive letter's colon is no line separator; `\` separates as `/` does, UNC paths too.
    assert parse_frame(r"$C:\research\owl\client.py:12 main") == (r"C:\research\owl\client.py", 12, "main")
    assert parse_frame(r"$\\fileserver\team\train.py:3 step") == (r"\\fileserver\team\train.py", 3, "step")
    stack = [
        r"$C:\Users\me\venv\Lib\site-packages\torch\nn\modules\linear.py:125 forward",
        r"$C:\Python311\Lib\json\decoder.py:353 raw_decode",
        r"$C:\research\owl\client.py:12 main",
        r"$\\fileserver\team\train.py:3 step",
    ]
    assert user_frames(stack) == ("client.py:12 in main", "train.py:3 in step")


# As the real Qwen trace nests them (PyTorch's `nn.Module: <Class>_<k>` events become `$class <Class>` calls):
# the decoder layer's forward > the attention module's call > Module plumbing > its forward > a Linear's call.
QWEN_ATTENTION = [
    "$torch/nn/modules/linear.py:124 forward",
    "$class Linear",
    "$torch/nn/modules/module.py:1743 _call_impl",
    "$transformers/models/qwen2/modeling_qwen2.py:68 apply_rotary_pos_emb",
    "$transformers/models/qwen2/modeling_qwen2.py:150 forward",
    "$torch/nn/modules/module.py:1743 _call_impl",
    "$class Qwen2Attention",
    "$transformers/models/qwen2/modeling_qwen2.py:243 forward",
    "$bench/text_base_model.py:28 run_on_input",
    "$bench/entry_point.py:106 run_action",
]


def test_the_innermost_model_frame_below_the_users_line_with_its_class():
    assert user_frames(QWEN_ATTENTION) == ("text_base_model.py:28 in run_on_input", "entry_point.py:106 in run_action")
    assert model_frame(QWEN_ATTENTION) == "Linear.forward (linear.py:124)"
    # Inside the attention's forward: its class; a function it calls has none.
    assert model_frame(QWEN_ATTENTION[4:]) == "Qwen2Attention.forward (modeling_qwen2.py:150)"
    assert model_frame(QWEN_ATTENTION[3:]) == "apply_rotary_pos_emb (modeling_qwen2.py:68)"
    # Torch.nn's Module plumbing is no layer; a frame outside any module call has no class.
    assert model_frame(QWEN_ATTENTION[5:]) == "forward (modeling_qwen2.py:243)"
    assert model_frame(QWEN_ATTENTION[8:]) == ""


def test_a_decorator_between_a_module_call_and_its_forward_keeps_the_class():
    stack = [
        "$transformers/models/qwen2/modeling_qwen2.py:323 forward",
        "$torch/utils/_contextlib.py:113 decorate_context",  # @torch.no_grad()
        "$torch/nn/modules/module.py:1743 _call_impl",
        "$class Qwen2RotaryEmbedding",
        "$/home/me/run.py:9 main",
    ]
    assert model_frame(stack) == "Qwen2RotaryEmbedding.forward (modeling_qwen2.py:323)"


def test_model_frames_by_whole_path_and_by_base_name():
    # A device memory profile's whole paths, a Python tracer's base names; a model frame above the user's is not shown.
    site = "/venv/lib/python3.11/site-packages"
    owl = [f"${site}/transformers/models/owlv2/modeling_owlv2.py:410 forward", "$/home/me/bench.py:20 run"]
    assert model_frame(owl) == "forward (modeling_owlv2.py:410)"
    assert model_frame([f"${site}/flax/linen/linear.py:250 __call__", "$/home/me/model.py:30 __call__"]) == (
        "__call__ (linear.py:250)"
    )
    assert model_frame([f"${site}/timm/layers/mlp.py:40 forward", "$/home/me/bench.py:20 run"]) == "forward (mlp.py:40)"
    assert model_frame([f"${site}/jax/_src/numpy/lax_numpy.py:10 ones", "$/home/me/bench.py:20 run"]) == ""
    assert model_frame(["$modeling_tf_bert.py:500 call", "$train.py:12 step"]) == "call (modeling_tf_bert.py:500)"
    assert user_frames(["$modeling_tf_bert.py:500 call", "$train.py:12 step"]) == ("train.py:12 in step",)
    above = ["$/home/me/loss.py:5 loss", f"${site}/diffusers/models/unet.py:80 forward", "$/home/me/run.py:1 main"]
    assert model_frame(above) == ""
    # Without a user frame, the innermost model frame is still shown.
    assert model_frame(owl[:1]) == "forward (modeling_owlv2.py:410)"


def test_the_telling_frame_is_below_a_helper_many_stacks_share():
    helper = "backend.py:190 in allocate"
    a = (helper, "model.py:171 in init_weight", "model.py:640 in init_all")
    b = (helper, "model.py:319 in init_weight", "model.py:640 in init_all")
    c = (helper, "model.py:319 in init_weight", "model.py:641 in init_all")
    alone = ("model.py:702 in forward", "train.py:9 in main")
    depth = telling_frames([a, b, c, alone, alone])
    # The helper's callers differ at their first frame below it: that frame tells them apart, even where deeper
    # frames differ too; a stack whose innermost frame nothing else shares keeps it.
    assert depth == {a: 1, b: 1, c: 1, alone: 0}


def test_stacks_through_one_frame_alike_keep_it_and_so_does_one_without_callers():
    same = ("train.py:40 in step", "train.py:90 in <module>")
    assert telling_frames([same, same]) == {same: 0}
    # A stack recorded without its callers is told apart from the one with them by nothing: both keep the line.
    inner = ("util.py:5 in make",)
    called = ("util.py:5 in make", "train.py:12 in main")
    assert telling_frames([inner, called]) == {inner: 0, called: 0}
    # Callers that first differ deeper down are told apart there; the stack without callers keeps its line.
    deep = [("util.py:5 in make", "lib.py:3 in build", f"train.py:{line} in main") for line in (12, 13)]
    assert telling_frames([inner, *deep]) == {inner: 0, deep[0]: 2, deep[1]: 2}
    assert telling_frames([()]) == {}


def test_a_line_mark_gives_its_line_to_the_frame_it_marks():
    # PyTorch names make by its first line (5) and main, running when the profiler started, by the line it was at
    # then (16); the capture helper's mark says make was at line 8 when it called the op.
    stack = ["@/src/prog.py:8 make", "$torch/_ops.py:1267 __call__", "$prog.py:5 make", "$prog.py:16 main"]
    assert user_frames(stack) == ("prog.py:8 in make", "prog.py:16 in main")
    # A mark whose frame the tracer did not record stands as that frame; the capture helper's own frames never count.
    unrecorded = ["@/src/prog.py:19 main", "$tb_leakfinder/capture/torch_profiler.py:53 __torch_function__"]
    assert user_frames(unrecorded) == ("prog.py:19 in main",)
