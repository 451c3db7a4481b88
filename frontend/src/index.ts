// The Leaks tab. TensorBoard loads this module in the plugin iframe and calls
// render(). All requests are relative to the iframe's base URL.

import uplotCss from 'uplot/dist/uPlot.min.css';
import {api, moduleKey, type ModuleSummary, type Report, type RunEntry, type Selection} from './api';
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
  private view: RunView | null = null;
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
        label('Run', this.selectors.run),
        label('Host', this.selectors.host),
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
    channel.listen(DATA_RELOADED, () => {
      void this.reload();
    });
  }

  async start(): Promise<void> {
    const state = await loadUrlState(this.channel);
    this.sel = {run: state.run ?? '', host: state.host ?? '', allocator: state.allocator ?? '', module: state.module ?? ''};
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
    if (!current || !this.runs) return this.show();
    const generation = this.generation;
    try {
      const runs = (await api.runs()).runs;
      const report = await this.fetchReport(this.sel.run, this.sel.host);
      if (generation !== this.generation) return;
      const same = JSON.stringify(runs) === JSON.stringify(this.runs) && JSON.stringify(report) === JSON.stringify(current);
      this.reports = new Map([[this.reportKey(), report]]);
      if (same) return;
      this.runs = runs;
    } catch {
      this.runs = null;
      this.reports.clear();
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
      if (!this.reports.has(this.reportKey())) {
        this.content.replaceChildren(notice('loading', `Analysing ${this.sel.run}${this.sel.host ? ` (${this.sel.host})` : ''}… (a large profile takes a few seconds the first time)`));
        const report = await this.fetchReport(this.sel.run, this.sel.host);
        if (stale()) return;
        this.reports.set(this.reportKey(), report);
        this.fillSelect(this.selectors.run, runNames, 'run', this.runLabels());
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
    const labels = new Map<string, string>();
    for (const report of this.reports.values()) {
      for (const run of report.runs) {
        // With several hosts, a verdict is only the run's when every host was analysed.
        if (this.hostsOf(run.run).length <= 1) labels.set(run.run, `${run.run} (${VERDICT_LABEL[run.verdict].toLowerCase()})`);
      }
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
    saveUrlState({...this.sel});
    this.updateLinks();
    this.view?.destroy();
    this.view = new RunView({sel: {...this.sel}, run, host, allocator, module: modules.find((m) => moduleKey(m) === this.sel.module)});
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
