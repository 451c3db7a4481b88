"""JAX device memory profiles (`jax.profiler.save_device_memory_profile`): a gzipped pprof Profile of the
buffers live at one moment, each file a snapshot of its own (a session with one host), read into the model
as allocations that are never freed, with their Python stacks as host calls."""
