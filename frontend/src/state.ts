// What the tab shows, and its place in TensorBoard's URL: the run, host,
// allocator and module (with the static view's selected buffer allocation),
// and while comparing, run B and its host.

import type {Selection} from './api';
import {loadUrlState, saveUrlState, stateUrl, type TensorBoardChannel} from './tensorboard';

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
  private selectedAllocation: number | null = null;

  /** Run A (or the only run): `allocator` is a memory id (see allocatorKey). */
  get sel(): Readonly<Selection> {
    return this.selection;
  }

  /** Run B and its host, "Compare with…"; an empty run is the single-run view. */
  get cmp(): Readonly<RunHost> {
    return this.other;
  }

  /** The buffer allocation selected in the static view's module (a Where link's), or null. */
  get allocation(): number | null {
    return this.selectedAllocation;
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
    this.selectedAllocation = parseAllocation(s.allocation);
  }

  save(): void {
    saveUrlState(this.urlState());
  }

  /** The address of this view with another module and its allocation selected: a Where cell's link. */
  urlWith(module: string, allocation: number): string {
    return stateUrl({...this.urlState(), module, allocation: String(allocation)});
  }

  /** Another run, host or module drops the static view's selected allocation. */
  set(key: keyof Selection, value: string): void {
    if (key !== 'allocator' && this.selection[key] !== value) this.selectedAllocation = null;
    this.selection = {...this.selection, [key]: value};
  }

  /** Shows `module` in the static view with `allocation` selected. */
  selectAllocation(module: string, allocation: number): void {
    this.set('module', module);
    this.selectedAllocation = allocation;
  }

  private urlState(): Record<string, string> {
    const allocation = this.selectedAllocation === null ? '' : String(this.selectedAllocation);
    return {...this.sel, allocation, compare: this.cmp.run, compare_host: this.cmp.host};
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
    this.selectedAllocation = null;
    this.selection = {...this.selection, ...this.other};
    this.other = a;
  }
}

/** An allocation index from the URL: a whole number, else none. */
function parseAllocation(text: string | undefined): number | null {
  return text !== undefined && /^\d{1,9}$/.test(text) ? Number(text) : null;
}
