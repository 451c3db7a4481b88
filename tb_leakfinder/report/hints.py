"""Per-format advice the report carries: how a profile of each format gets Python frames."""

STACK_HINT = (
    "No Python frames in this profile. For the line of Python that made each buffer, capture with "
    "tb_leakfinder.capture(logdir, python_tracer=True) (or its Keras callback), or with the Profile tab's "
    "Capture Profile at Python tracer level 1"
)
TORCH_STACK_HINT = (
    "No Python frames in this trace. For the line of Python that made each buffer, profile with "
    "torch.profiler.profile(profile_memory=True, with_stack=True)"
)
TORCH_SNAPSHOT_STACK_HINT = (
    "No Python frames in this snapshot. For the line of Python that made each buffer, record with "
    "torch.cuda.memory._record_memory_history(stacks='python') (or 'all') before the steps you snapshot"
)
# How each format's profiles get Python frames, by its registry name. A JAX device memory profile records every
# buffer's stack whenever it is saved, so there is nothing to advise and it has no entry.
STACK_HINTS = {"xplane": STACK_HINT, "torch_trace": TORCH_STACK_HINT, "torch_snapshot": TORCH_SNAPSHOT_STACK_HINT}
