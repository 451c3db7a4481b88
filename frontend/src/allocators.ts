// Allocators as XProf's Memory Profile lists them: each under its memory id,
// shown with a readable label, and which one the tab opens on.

import type {AllocatorReport, HostReport} from './api';

type Named = Pick<AllocatorReport, 'memory_id' | 'allocator'>;

/** What the tab sends as `allocator` and keeps in the URL: the memory id, or the label when there is none. */
export function allocatorKey(a: Named): string {
  return a.memory_id || a.allocator;
}

/** "TPU:2 · memory id 2", or the name alone when it is the memory id. */
export function allocatorLabel(a: Named): string {
  return a.memory_id && a.memory_id !== a.allocator ? `${a.allocator} · memory id ${a.memory_id}` : a.allocator;
}

/**
 * The allocator the tab opens on: the one the report's `default_allocator` names (decided in Python,
 * analyses/host_decisions.py, with the reason the tab shows), undefined for a host without allocators.
 */
export function defaultAllocator<A extends Named>(host: {allocators: A[]; default_allocator: HostReport['default_allocator']}): A | undefined {
  const chosen = host.default_allocator;
  if (!chosen) return undefined;
  return host.allocators.find((a) => a.memory_id === chosen.memory_id && a.allocator === chosen.allocator);
}
