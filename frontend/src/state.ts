// What the tab shows, and its place in TensorBoard's URL: the run, host,
// allocator and module, and while comparing, run B and its host.

import type {Selection} from './api';
import {loadUrlState, saveUrlState, type TensorBoardChannel} from './tensorboard';

/** One side of a comparison: a run and one of its hosts. */
export interface RunHost {
  run: string;
  host: string;
}

/**
 * Read-only outside, so that set() and the comparison's setters are the only
 * way the selection changes. They replace the objects rather than mutate them:
 * what a caller read stays as it was.
 */
export class ViewState {
  private selection: Selection = {run: '', host: '', allocator: '', module: ''};
  private other: RunHost = {run: '', host: ''};

  /** Run A (or the only run): `allocator` is a memory id (see allocatorKey). */
  get sel(): Readonly<Selection> {
    return this.selection;
  }

  /** Run B and its host, "Compare with…"; an empty run is the single-run view. */
  get cmp(): Readonly<RunHost> {
    return this.other;
  }

  get comparing(): boolean {
    return this.cmp.run !== '';
  }

  get a(): RunHost {
    return {run: this.sel.run, host: this.sel.host};
  }

  /** Reads the state a link carries (TensorBoard's `p.leakfinder.*` hash entries). */
  async load(channel: TensorBoardChannel): Promise<void> {
    const s = await loadUrlState(channel);
    this.selection = {run: s.run ?? '', host: s.host ?? '', allocator: s.allocator ?? '', module: s.module ?? ''};
    this.other = {run: s.compare ?? '', host: s.compare_host ?? ''};
  }

  save(): void {
    saveUrlState({...this.sel, compare: this.cmp.run, compare_host: this.cmp.host});
  }

  set(key: keyof Selection, value: string): void {
    this.selection = {...this.selection, [key]: value};
  }

  /** Compares with run B (its host is chosen once its hosts are known); '' ends comparing. */
  compareWith(run: string): void {
    this.other = {run, host: ''};
  }

  setCompareHost(host: string): void {
    this.other = {...this.other, host};
  }

  /** Run B becomes A and A becomes B. */
  swap(): void {
    const a = this.a;
    this.selection = {...this.selection, ...this.other};
    this.other = a;
  }
}
