// Allocators as XProf's Memory Profile lists them: each under its memory id,
// shown with a readable label, and which one the tab opens on.

import type {AllocatorReport} from './api';

type Named = Pick<AllocatorReport, 'memory_id' | 'allocator'>;

/** What the tab sends as `allocator` and keeps in the URL: the memory id, or the label when there is none. */
export function allocatorKey(a: Named): string {
  return a.memory_id || a.allocator;
}

/** "TPU:2 · memory id 2", or the name alone when it is the memory id. */
export function allocatorLabel(a: Named): string {
  return a.memory_id && a.memory_id !== a.allocator ? `${a.allocator} · memory id ${a.memory_id}` : a.allocator;
}

/** Host memory pinned for transfers (TensorFlow's gpu_host_bfc, XLA's pinned_host): never the first to show. */
const HOST_PINNED = /host|pinned/i;
/** A device's own memory (HBM): a TPU:N / GPU:N label, TensorFlow's GPU_N_bfc, or a device index as the id. */
const DEVICE_MEMORY = /^(TPU|GPU):\d+$|^GPU_\d+_bfc$/i;

/** 0 for device memory, 1 for other allocators, 2 for host pinned memory. */
export function memoryRank(a: Named): number {
  if (HOST_PINNED.test(a.allocator) || HOST_PINNED.test(a.memory_id)) return 2;
  if (DEVICE_MEMORY.test(a.allocator) || /^\d+$/.test(a.memory_id)) return 0;
  return 1;
}

/**
 * The allocator the tab opens on: one that leaks (device memory first, then
 * the fastest leak), else device memory with the highest peak.
 */
export function defaultAllocator<A extends AllocatorReport>(allocators: A[]): A | undefined {
  const leaking = allocators.filter((a) => a.verdict === 'leak');
  const pool = leaking.length ? leaking : allocators;
  const size = (a: A) => (leaking.length ? a.leak_bytes_per_step : a.peak_bytes_in_use);
  return pool.slice().sort((a, b) => memoryRank(a) - memoryRank(b) || size(b) - size(a))[0];
}
