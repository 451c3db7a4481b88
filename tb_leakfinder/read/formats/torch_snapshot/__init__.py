"""PyTorch memory snapshots (`torch.cuda.memory._dump_snapshot`'s pickle, loaded without any class): each
device's trace of allocations and frees over its window, with each allocation's Python stack as host calls,
annotations as steps, and the blocks live before the window as the heap it starts with; each file a capture
of its own (a session with one host)."""
