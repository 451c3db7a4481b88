"""PyTorch profiler traces (`torch.profiler` with `profile_memory=True`, Kineto's Chrome trace JSON): the
`[memory]` instant events of each device as allocations and frees, `ProfilerStep#N` as steps, the op enclosing
each allocation, and `python_function` events (with_stack) as host calls."""
