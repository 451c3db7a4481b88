"""Which Python frames are the user's, from the Python tracer's names."""

from __future__ import annotations

from tb_leakfinder.analyses.frames import MAX_FRAMES, parse_frame, user_frames


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
