// The data the tab has fetched: the run list, reports by run and host, and
// comparisons by both sides. Each report asks for one host, so a run with
// many hosts costs one host's analysis at a time. Everything the tab shows
// comes through here, the panels' own requests too.

import {ApiError, api, type BuffersAnswer, type ComparisonAnswer, type FormatListing, type HistoryAnswer, type Limits, type ModuleAnswer, type OverviewAnswer, type ReportAnswer, type RunEntry, type TimelineAnswer, type Verdict} from './api';
import type {RunHost} from './state';

function key(...parts: string[]): string {
  return parts.join('\u0000');
}

export class DataCache {
  /** null until fetched (and after a failed refresh). */
  runs: RunEntry[] | null = null;
  /** Every format read, with the run list: how to record one, for a logdir with none. */
  formats: FormatListing[] = [];
  private reports = new Map<string, ReportAnswer>();
  private comparisons = new Map<string, ComparisonAnswer>();
  /** Histories by TensorBoard run: every capture of the run shares one. */
  private histories = new Map<string, HistoryAnswer>();
  /** The hosts whose report was refused because their file could not be read (422), by run. */
  private refused = new Map<string, Set<string>>();

  hostsOf(run: string): string[] {
    return this.runs?.find((r) => r.run === run)?.hosts ?? [];
  }

  async loadRuns(): Promise<RunEntry[]> {
    if (this.runs === null) {
      const answer = await api.runs();
      this.runs = answer.runs;
      this.formats = answer.formats;
    }
    return this.runs;
  }

  cachedReport(side: RunHost): ReportAnswer | undefined {
    return this.reports.get(key(side.run, side.host));
  }

  async report(side: RunHost): Promise<ReportAnswer> {
    const cached = this.cachedReport(side);
    if (cached) return cached;
    try {
      const report = await api.report(side.run, side.host || undefined);
      this.reports.set(key(side.run, side.host), report);
      return report;
    } catch (err) {
      if (err instanceof ApiError && err.status === 422) {
        const host = side.host || this.hostsOf(side.run)[0] || '';
        this.refused.set(side.run, new Set([...(this.refused.get(side.run) ?? []), host]));
      }
      throw err;
    }
  }

  /**
   * The hosts of `run` known to be unreadable: those the run list names
   * (found by any earlier request) and those whose report was refused here.
   */
  unreadableHosts(run: string): string[] {
    const listed = this.runs?.find((r) => r.run === run)?.errors.map((e) => e.host) ?? [];
    const known = new Set([...listed, ...(this.refused.get(run) ?? [])]);
    return this.hostsOf(run).filter((h) => known.has(h));
  }

  cachedComparison(a: RunHost, b: RunHost): ComparisonAnswer | undefined {
    return this.comparisons.get(key(a.run, a.host, b.run, b.host));
  }

  async comparison(a: RunHost, b: RunHost): Promise<ComparisonAnswer> {
    const cached = this.cachedComparison(a, b);
    if (cached) return cached;
    const comparison = await api.compare(a, b);
    this.comparisons.set(key(a.run, a.host, b.run, b.host), comparison);
    return comparison;
  }

  cachedHistory(tbRun: string): HistoryAnswer | undefined {
    return this.histories.get(tbRun);
  }

  /**
   * The history of a TensorBoard run's captures (`tbRun`: see tensorboardRun()),
   * kept: opening another capture of the run shows it again without asking.
   */
  async history(tbRun: string, signal?: AbortSignal): Promise<HistoryAnswer> {
    const cached = this.cachedHistory(tbRun);
    if (cached) return cached;
    const history = await api.history(tbRun, signal);
    this.histories.set(tbRun, history);
    return history;
  }

  // The panels' answers are not kept: each is for one zoom range, family,
  // page or chart width, and a reload that changed anything rebuilds the
  // panels, which ask again.

  timeline(...args: Parameters<typeof api.timeline>): Promise<TimelineAnswer> {
    return api.timeline(...args);
  }

  buffers(...args: Parameters<typeof api.buffers>): Promise<BuffersAnswer> {
    return api.buffers(...args);
  }

  module(...args: Parameters<typeof api.module>): Promise<ModuleAnswer> {
    return api.module(...args);
  }

  /** Asked again on each reload: the pod overview redraws only when its answer changed. */
  overview(...args: Parameters<typeof api.overview>): Promise<OverviewAnswer> {
    return api.overview(...args);
  }

  /** The server's limits, from any report fetched (they are the same in all). */
  get limits(): Limits | undefined {
    for (const report of this.reports.values()) return report.limits;
    return undefined;
  }

  /** Every run's verdict known so far, from reports and comparisons. */
  /** The runs whose report, fetched, holds an allocator taken at an out-of-memory error. */
  outOfMemory(): Set<string> {
    const out = new Set<string>();
    for (const report of this.reports.values()) {
      for (const run of report.runs) if (run.hosts.some((h) => h.allocators.some((a) => a.out_of_memory))) out.add(run.run);
    }
    return out;
  }

  verdicts(): [string, Verdict][] {
    const out: [string, Verdict][] = [];
    for (const report of this.reports.values()) out.push(...report.runs.map((r): [string, Verdict] => [r.run, r.verdict]));
    for (const c of this.comparisons.values()) out.push([c.run_a, c.verdict_a], [c.run_b, c.verdict_b]);
    return out;
  }

  /** How many buffers the static view flags in each run analysed so far (its compiled programs' `actionable`). */
  findings(): Map<string, number> {
    const out = new Map<string, number>();
    for (const report of this.reports.values()) {
      for (const r of report.runs) out.set(r.run, r.hosts.reduce((n, h) => n + (h.modules ?? []).reduce((m, s) => m + s.actionable.length, 0), 0));
    }
    return out;
  }

  /**
   * Fetches again the run list and what is shown (the report of `a`, and the
   * comparison with `b`), keeping only those. Resolves whether anything
   * changed; on failure everything is dropped, to be fetched anew. Nothing
   * is kept if the tab moved on meanwhile (`stale`).
   */
  async refresh(a: RunHost, b: RunHost | null, stale: () => boolean): Promise<boolean> {
    const before = JSON.stringify([this.runs, this.cachedReport(a), b ? this.cachedComparison(a, b) : null]);
    try {
      const runs = (await api.runs()).runs;
      const report = await api.report(a.run, a.host || undefined);
      const comparison = b ? await api.compare(a, b) : null;
      if (stale()) return false;
      this.clear();
      this.runs = runs;
      this.reports.set(key(a.run, a.host), report);
      if (b && comparison) this.comparisons.set(key(a.run, a.host, b.run, b.host), comparison);
      return JSON.stringify([runs, report, comparison]) !== before;
    } catch {
      if (stale()) return false;
      this.clear();
      return true;
    }
  }

  clear(): void {
    this.runs = null;
    this.reports.clear();
    this.comparisons.clear();
    this.histories.clear();
    this.refused.clear();
  }
}
