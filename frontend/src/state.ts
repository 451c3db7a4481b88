// What the tab shows, and its place in TensorBoard's URL: the run, host,
// allocator and module, and while comparing, run B and its host.

import type {Selection} from './api';
import {loadUrlState, saveUrlState, type TensorBoardChannel} from './tensorboard';

/** One side of a comparison: a run and one of its hosts. */
export interface RunHost {
  run: string;
  host: string;
}

export class ViewState {
  /** Run A (or the only run): `allocator` is a memory id (see allocatorKey). */
  sel: Selection = {run: '', host: '', allocator: '', module: ''};
  /** Run B and its host, "Compare with…"; an empty run is the single-run view. */
  cmp: RunHost = {run: '', host: ''};

  get comparing(): boolean {
    return this.cmp.run !== '';
  }

  get a(): RunHost {
    return {run: this.sel.run, host: this.sel.host};
  }

  /** Reads the state a link carries (TensorBoard's `p.leakfinder.*` hash entries). */
  async load(channel: TensorBoardChannel): Promise<void> {
    const s = await loadUrlState(channel);
    this.sel = {run: s.run ?? '', host: s.host ?? '', allocator: s.allocator ?? '', module: s.module ?? ''};
    this.cmp = {run: s.compare ?? '', host: s.compare_host ?? ''};
  }

  save(): void {
    saveUrlState({...this.sel, compare: this.cmp.run, compare_host: this.cmp.host});
  }

  set(key: keyof Selection, value: string): void {
    this.sel = {...this.sel, [key]: value};
  }

  /** Compares with run B (its host is chosen once its hosts are known); '' ends comparing. */
  compareWith(run: string): void {
    this.cmp = {run, host: ''};
  }

  setCompareHost(host: string): void {
    this.cmp = {...this.cmp, host};
  }

  /** Run B becomes A and A becomes B. */
  swap(): void {
    const a = this.a;
    this.sel = {...this.sel, ...this.cmp};
    this.cmp = a;
  }
}
