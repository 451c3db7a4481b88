// The Leaks tab. TensorBoard loads this module in the plugin iframe and calls
// render(). All requests are relative to the iframe's base URL.

import uplotCss from 'uplot/dist/uPlot.min.css';
import {api, type Comparison, moduleKey, type ModuleSummary, type Report, type RunEntry, type Selection, type Verdict} from './api';
import {CompareView} from './compare';
import {el, errorMessage, notice} from './dom';
import {DATA_RELOADED, HostChannel, loadUrlState, sameOriginParent, saveUrlState, type Theme, watchTheme, xprofUrl} from './host';
import styles from './styles.css';
import {VERDICT_LABEL} from './panels/verdict';
import {RunView} from './view';

type Status = 'loading' | 'ready' | 'empty' | 'error';

/** How long the first opening may spend looking for a run that leaks. */
const PICK_BUDGET_MS = 8000;

function option(value: string, text: string, selected: boolean): HTMLOptionElement {
  const o = el('option', {value}, text);
  o.selected = selected;
  return o;
}

function pick(wanted: string, available: string[]): string {
  return available.includes(wanted) ? wanted : (available[0] ?? '');
}

class App {
  readonly root = el('main', {class: 'lf-root', 'data-state': 'loading'});
  private readonly selectors = {
    run: el('select', {'aria-label': 'Run', 'data-select': 'run'}),
    host: el('select', {'aria-label': 'Host', 'data-select': 'host'}),
    allocator: el('select', {'aria-label': 'Allocator (memory ID)', 'data-select': 'allocator'}),
    module: el('select', {'aria-label': 'Module (static view)', 'data-select': 'module'}),
  };
  /** Run B and its host: "Compare with…" (empty: the single-run view). */
  private readonly compareSelectors = {
    run: el('select', {'aria-label': 'Compare with (run B)', 'data-select': 'compare'}),
    host: el('select', {'aria-label': 'Host of run B', 'data-select': 'compare-host'}),
  };
  private readonly swapButton = el('button', {type: 'button', 'data-action': 'swap', title: 'Swap runs A and B'}, '⇄ Swap');
  private readonly runLabel = el('span', {}, 'Run');
  private readonly compareHostLabel = el('label', {}, 'Host B', this.compareSelectors.host);
  private cmp = {run: '', host: ''};
  /** Comparisons fetched so far, by both runs and hosts. */
  private comparisons = new Map<string, Comparison>();
  private readonly links = el('span', {class: 'lf-links'});
  private readonly content = el('div', {class: 'lf-content'});
  private sel: Selection = {run: '', host: '', allocator: '', module: ''};
  private runs: RunEntry[] | null = null;
  /**
   * Reports fetched so far, by run and host. Each asks for one host, so a run
   * with many hosts costs one host's analysis at a time.
   */
  private reports = new Map<string, Report>();

  private hostsOf(run: string): string[] {
    return this.runs?.find((r) => r.run === run)?.hosts ?? [];
  }

  private reportKey(run = this.sel.run, host = this.sel.host): string {
    return `${run}\u0000${host}`;
  }

  private fetchReport(run: string, host: string): Promise<Report> {
    return api.report(run, host || undefined);
  }
  private compareKey(): string {
    return this.cmp.run ? [this.sel.run, this.sel.host, this.cmp.run, this.cmp.host].join('\u0000') : '';
  }

  private fetchCompare(): Promise<Comparison> {
    return api.compare({run: this.sel.run, host: this.sel.host}, this.cmp);
  }
  private view: RunView | CompareView | null = null;
  private generation = 0;
  /** How many show() calls are fetching: they fetch fresh data anyway, so a reload then is moot. */
  private showing = 0;

  constructor(private readonly channel: HostChannel) {
    const label = (text: string, select: HTMLSelectElement) => el('label', {}, text, select);
    this.root.append(
      el(
        'div',
        {class: 'lf-toolbar'},
        el('h1', {}, 'Leaks'),
        el('label', {}, this.runLabel, this.selectors.run),
        label('Host', this.selectors.host),
        label('Compare with…', this.compareSelectors.run),
        this.compareHostLabel,
        this.swapButton,
        label('Allocator', this.selectors.allocator),
        label('Module', this.selectors.module),
        this.links,
      ),
      this.content,
    );
    for (const key of ['run', 'host', 'allocator', 'module'] as const) {
      this.selectors[key].addEventListener('change', () => {
        this.sel = {...this.sel, [key]: this.selectors[key].value};
        void this.show();
      });
    }
    this.compareSelectors.run.addEventListener('change', () => {
      this.cmp = {run: this.compareSelectors.run.value, host: ''};
      void this.show();
    });
    this.compareSelectors.host.addEventListener('change', () => {
      this.cmp = {...this.cmp, host: this.compareSelectors.host.value};
      void this.show();
    });
    this.swapButton.addEventListener('click', () => {
      const a = {run: this.sel.run, host: this.sel.host};
      this.sel = {...this.sel, run: this.cmp.run, host: this.cmp.host};
      this.cmp = a;
      void this.show();
    });
    channel.listen(DATA_RELOADED, () => {
      void this.reload();
    });
  }

  async start(): Promise<void> {
    const state = await loadUrlState(this.channel);
    this.sel = {run: state.run ?? '', host: state.host ?? '', allocator: state.allocator ?? '', module: state.module ?? ''};
    this.cmp = {run: state.compare ?? '', host: state.compare_host ?? ''};
    await this.show();
  }

  /**
   * TensorBoard reloaded its data (reload button or auto-reload): fetches the
   * run list and the current report again, and redraws only if they changed,
   * so that a periodic reload does not reset what the user is looking at.
   */
  async reload(): Promise<void> {
    if (this.showing > 0) return;
    const current = this.reports.get(this.reportKey());
    const compareKey = this.compareKey();
    const currentComparison = this.comparisons.get(compareKey);
    if (!current || !this.runs || (compareKey && !currentComparison)) return this.show();
    const generation = this.generation;
    try {
      const runs = (await api.runs()).runs;
      const report = await this.fetchReport(this.sel.run, this.sel.host);
      const comparison = compareKey ? await this.fetchCompare() : undefined;
      if (generation !== this.generation) return;
      const same =
        JSON.stringify(runs) === JSON.stringify(this.runs) &&
        JSON.stringify(report) === JSON.stringify(current) &&
        JSON.stringify(comparison) === JSON.stringify(currentComparison);
      this.reports = new Map([[this.reportKey(), report]]);
      this.comparisons = comparison ? new Map([[compareKey, comparison]]) : new Map();
      if (same) return;
      this.runs = runs;
    } catch {
      this.runs = null;
      this.reports.clear();
      this.comparisons.clear();
    }
    await this.show();
  }

  setTheme(theme: Theme): void {
    document.documentElement.dataset.theme = theme;
    this.view?.redraw();
  }

  private setStatus(status: Status, ...message: (Node | string)[]): void {
    this.root.dataset.state = status;
    if (message.length) {
      this.view?.destroy();
      this.view = null;
      this.content.replaceChildren(...message);
    }
  }

  private async show(): Promise<void> {
    this.showing++;
    try {
      await this.showNow();
    } finally {
      this.showing--;
    }
  }

  private async showNow(): Promise<void> {
    const generation = ++this.generation;
    const stale = () => generation !== this.generation;
    this.setStatus('loading', notice('loading', 'Loading…'));
    try {
      if (!this.runs) {
        const runs = (await api.runs()).runs;
        if (stale()) return;
        this.runs = runs;
      }
      const runNames = this.runs.map((r) => r.run);
      if (!runNames.includes(this.sel.run) && runNames.length > 1) {
        this.sel.run = await this.pickDefaultRun(runNames, stale);
        if (stale()) return;
      }
      this.fillSelect(this.selectors.run, runNames, 'run', this.runLabels());
      if (!this.runs.length) {
        this.fillSelect(this.selectors.host, [], 'host');
        this.fillSelect(this.selectors.allocator, [], 'allocator');
        this.fillSelect(this.selectors.module, [], 'module');
        this.fillCompare(runNames);
        this.setStatus(
          'empty',
          el(
            'div',
            {class: 'lf-notice lf-notice-empty', 'data-empty': 'no-runs'},
            el('p', {}, el('strong', {}, 'No profiles found in this logdir.')),
            el('p', {}, 'Capture one with XProf (tf.profiler.experimental.start(logdir) or jax.profiler.start_trace(logdir)); its files land in <logdir>/<run>/plugins/profile/<session>/.'),
          ),
        );
        this.updateLinks();
        return;
      }
      this.fillSelect(this.selectors.host, this.hostsOf(this.sel.run), 'host');
      this.fillCompare(runNames);
      if (!this.reports.has(this.reportKey())) {
        this.content.replaceChildren(notice('loading', `Analysing ${this.sel.run}${this.sel.host ? ` (${this.sel.host})` : ''}… (a large profile takes a few seconds the first time)`));
        const report = await this.fetchReport(this.sel.run, this.sel.host);
        if (stale()) return;
        this.reports.set(this.reportKey(), report);
        this.fillSelect(this.selectors.run, runNames, 'run', this.runLabels());
        this.fillCompare(runNames);
      }
      const compareKey = this.compareKey();
      if (compareKey && !this.comparisons.has(compareKey)) {
        this.content.replaceChildren(notice('loading', `Comparing ${this.sel.run} (A) with ${this.cmp.run} (B)…`));
        const comparison = await this.fetchCompare();
        if (stale()) return;
        this.comparisons.set(compareKey, comparison);
        this.fillCompare(runNames);
      }
      this.render();
    } catch (err) {
      if (stale()) return;
      this.setStatus('error', notice('error', el('p', {}, el('strong', {}, 'Could not load: '), errorMessage(err))));
      this.updateLinks();
    }
  }

  /**
   * With no run asked for, opens the first run that leaks: reports are
   * fetched in order for a few seconds at most, else the first run is shown.
   */
  private async pickDefaultRun(runs: string[], stale: () => boolean): Promise<string> {
    const deadline = Date.now() + PICK_BUDGET_MS;
    for (const [i, run] of runs.entries()) {
      if (Date.now() > deadline) break;
      this.content.replaceChildren(notice('loading', `Looking for a run that leaks… (analysing ${i + 1} of ${runs.length}: ${run})`));
      try {
        const host = this.hostsOf(run)[0] ?? '';
        const report = this.reports.get(this.reportKey(run, host)) ?? (await this.fetchReport(run, host));
        if (stale()) return '';
        this.reports.set(this.reportKey(run, host), report);
        if (report.runs.some((r) => r.verdict === 'leak')) return run;
      } catch {
        // shown when that run is opened
      }
    }
    return runs[0];
  }

  private runLabels(): Map<string, string> {
    const verdicts: [string, Verdict][] = [];
    for (const report of this.reports.values()) verdicts.push(...report.runs.map((r): [string, Verdict] => [r.run, r.verdict]));
    for (const c of this.comparisons.values()) verdicts.push([c.run_a, c.verdict_a], [c.run_b, c.verdict_b]);
    const labels = new Map<string, string>();
    for (const [run, verdict] of verdicts) {
      // With several hosts, a verdict is only the run's when every host was analysed.
      if (this.hostsOf(run).length <= 1) labels.set(run, `${run} (${VERDICT_LABEL[verdict].toLowerCase()})`);
    }
    return labels;
  }

  private fillSelect(select: HTMLSelectElement, values: string[], key: keyof Selection, labels?: Map<string, string>): void {
    const value = pick(this.sel[key], values);
    this.sel[key] = value;
    select.replaceChildren(...values.map((v) => option(v, labels?.get(v) ?? v, v === value)));
    if (!values.length) select.append(option('', key === 'module' ? 'no modules' : '—', true));
    select.disabled = values.length <= 1;
  }

  /**
   * "Compare with…": every run (a run with itself compares two of its hosts),
   * and a run of the URL that is no longer listed, so that its error shows.
   */
  private fillCompare(runNames: string[]): void {
    const {run: select, host: hostSelect} = this.compareSelectors;
    const labels = this.runLabels();
    const names = this.cmp.run && !runNames.includes(this.cmp.run) ? [...runNames, this.cmp.run] : runNames;
    select.replaceChildren(
      option('', 'none (this run alone)', !this.cmp.run),
      ...names.map((v) => option(v, runNames.includes(v) ? (labels.get(v) ?? v) : `${v} (not found)`, v === this.cmp.run)),
    );
    select.disabled = !runNames.length;
    const hosts = this.hostsOf(this.cmp.run);
    if (hosts.length) this.cmp.host = hosts.includes(this.cmp.host) ? this.cmp.host : hosts.includes(this.sel.host) ? this.sel.host : hosts[0];
    hostSelect.replaceChildren(...hosts.map((h) => option(h, h, h === this.cmp.host)));
    if (!hosts.length) hostSelect.append(option(this.cmp.host, this.cmp.host || '—', true));
    hostSelect.disabled = hosts.length <= 1;
    const comparing = !!this.cmp.run;
    this.compareHostLabel.hidden = !comparing;
    this.swapButton.hidden = !comparing;
    this.runLabel.textContent = comparing ? 'Run A' : 'Run';
    this.root.dataset.compare = comparing ? 'on' : 'off';
  }

  private render(): void {
    const report = this.reports.get(this.reportKey());
    const run = report?.runs.find((r) => r.run === this.sel.run) ?? report?.runs[0];
    if (!run) {
      this.setStatus('error', notice('error', `The report has no run named ${this.sel.run}.`));
      return;
    }
    const host = run.hosts.find((h) => h.host === this.sel.host) ?? run.hosts[0];
    if (!host) {
      this.setStatus('empty', notice('empty', `Run ${run.run} has no hosts.`));
      return;
    }
    const verdicts = new Map(host.allocators.map((a) => [a.name, `${a.name} (${a.verdict.replace('_', ' ')})`]));
    this.fillSelect(this.selectors.allocator, host.allocators.map((a) => a.name), 'allocator', verdicts);
    const modules = host.modules ?? [];
    this.fillSelect(this.selectors.module, modules.map(moduleKey), 'module');
    const allocator = host.allocators.find((a) => a.name === this.sel.allocator) ?? null;
    saveUrlState({...this.sel, compare: this.cmp.run, compare_host: this.cmp.host});
    this.updateLinks();
    this.view?.destroy();
    const comparison = this.comparisons.get(this.compareKey());
    // The static view is one run's: its selector waits while comparing.
    if (comparison) this.selectors.module.disabled = true;
    this.view = comparison
      ? new CompareView({comparison, a: {...this.sel}, b: {...this.cmp}})
      : new RunView({sel: {...this.sel}, run, host, allocator, module: modules.find((m) => moduleKey(m) === this.sel.module)});
    this.content.replaceChildren(this.view.element);
    this.view.start();
    this.setStatus('ready');
  }

  private currentModule(): ModuleSummary | undefined {
    const run = this.reports.get(this.reportKey())?.runs.find((r) => r.run === this.sel.run);
    const host = run?.hosts.find((h) => h.host === this.sel.host);
    return host?.modules?.find((m) => moduleKey(m) === this.sel.module);
  }

  private updateLinks(): void {
    this.links.replaceChildren();
    if (!this.sel.run || !sameOriginParent()) return;
    const link = (text: string, href: string) => el('a', {href, target: '_top', rel: 'noopener'}, text);
    this.links.append(link('Open in XProf Memory Profile', xprofUrl('memory_profile', this.sel.run, this.sel.host)));
    const module = this.currentModule();
    if (module) this.links.append(link('Open in XProf Memory Viewer', xprofUrl('memory_viewer', this.sel.run, this.sel.host, module.name)));
  }
}

let started = false;

export async function render(): Promise<void> {
  if (started) return;
  started = true;
  const style = document.createElement('style');
  style.textContent = `${uplotCss}\n${styles}`;
  document.head.appendChild(style);
  const meta = document.createElement('meta');
  meta.name = 'viewport';
  meta.content = 'width=device-width, initial-scale=1';
  document.head.appendChild(meta);
  const channel = new HostChannel(window.parent && window.parent !== window ? window.parent : null);
  const app = new App(channel);
  document.documentElement.dataset.theme = watchTheme((theme) => app.setTheme(theme));
  document.body.appendChild(app.root);
  await app.start();
}
