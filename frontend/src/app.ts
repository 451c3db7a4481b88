// The tab's frame: the toolbar (run, host, "Compare with…", allocator,
// module), the links into XProf, and the view of the current selection. What
// is selected lives in ViewState, what was fetched in DataCache.

import {allocatorKey, allocatorLabel, defaultAllocator} from './allocators';
import {ApiError, type HostReport, moduleKey, type ModuleSummary, type RunEntry, type Selection, type Site} from './api';
import {CompareView} from './compare';
import {DataCache} from './data';
import {el, errorMessage, notice} from './dom';
import {countOf, shortProgram} from './format';
import {LatestRequest, type Panel} from './panel';
import {captureCount, tensorboardRun} from './panels/history';
import {OverviewView} from './panels/overview';
import {VERDICT_LABEL} from './panels/verdict';
import type {SiteLinks} from './sites';
import {ViewState} from './state';
import {DATA_RELOADED, sameOriginParent, type TensorBoardChannel, type Theme, xprofUrl} from './tensorboard';
import {noProfilesFound, RunView} from './view';

type Status = 'loading' | 'ready' | 'empty' | 'error';

/** The host selector's entry for the pod overview of a multi-host run. */
const ALL_HOSTS = '';
const ALL_HOSTS_LABEL = new Map([[ALL_HOSTS, 'All hosts (overview)']]);

/** How long the first opening may spend looking for a run that leaks. */
const PICK_BUDGET_MS = 8000;

/** How often the background scan looks again whether the tab's own fetching is done. */
const SCAN_PAUSE_MS = 250;

function option(value: string, text: string, selected: boolean): HTMLOptionElement {
  const o = el('option', {value}, text);
  o.selected = selected;
  return o;
}

export class App {
  readonly root = el('main', {class: 'lf-root', 'data-state': 'loading'});
  private readonly state = new ViewState();
  private readonly data = new DataCache();
  private readonly selectors = {
    run: el('select', {'aria-label': 'Run', 'data-select': 'run'}),
    host: el('select', {'aria-label': 'Host', 'data-select': 'host'}),
    allocator: el('select', {'aria-label': 'Allocator (memory ID)', 'data-select': 'allocator'}),
    module: el('select', {'aria-label': 'Module (static view)', 'data-select': 'module'}),
  };
  /** Run B and its host: "Compare with…". */
  private readonly compareSelectors = {
    run: el('select', {'aria-label': 'Compare with (run B)', 'data-select': 'compare'}),
    host: el('select', {'aria-label': 'Host of run B', 'data-select': 'compare-host'}),
  };
  private readonly swapButton = el('button', {type: 'button', 'data-action': 'swap', title: 'Swap runs A and B'}, '⇄ Swap');
  private readonly runLabel = el('span', {}, 'Run');
  private readonly compareHostLabel = el('label', {}, 'Host B', this.compareSelectors.host);
  /** The static view's selector: only an XProf host has compiled programs to show. */
  private readonly moduleLabel = el('label', {'data-label': 'module'}, 'Module', this.selectors.module);
  private readonly links = el('span', {class: 'lf-links'});
  private readonly content = el('div', {class: 'lf-content'});
  private view: Panel | null = null;
  /** The newest show(): an older one still fetching drops what it gets. */
  private readonly shows = new LatestRequest();
  /** How many show() calls are fetching: they fetch fresh data anyway, so a reload then is moot. */
  private showing = 0;
  /** Set by a Where link: the next view scrolls to the static view's selected buffer. */
  private revealStatic = false;
  /** The run list the background scan (scanRuns) is going through; null when none is. */
  private scanning: RunEntry[] | null = null;
  /** A refill of the run choices waits for the select the user has open to lose the focus (refillRunChoices). */
  private refillOnBlur = false;

  constructor(private readonly channel: TensorBoardChannel) {
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
        this.moduleLabel,
        this.links,
      ),
      this.content,
    );
    for (const key of ['run', 'host', 'allocator', 'module'] as const) {
      this.selectors[key].addEventListener('change', () => {
        this.state.set(key, this.selectors[key].value);
        void this.show();
      });
    }
    this.compareSelectors.run.addEventListener('change', () => {
      this.state.compareWith(this.compareSelectors.run.value);
      void this.show();
    });
    this.compareSelectors.host.addEventListener('change', () => {
      this.state.setCompareHost(this.compareSelectors.host.value);
      void this.show();
    });
    this.swapButton.addEventListener('click', () => {
      this.state.swap();
      void this.show();
    });
    channel.listen(DATA_RELOADED, () => {
      void this.reload();
    });
  }

  async start(): Promise<void> {
    await this.state.load(this.channel);
    await this.show();
  }

  /**
   * TensorBoard reloaded its data (reload button or auto-reload): fetches the
   * run list and what is shown again, and redraws only if they changed, so
   * that a periodic reload does not reset what the user is looking at.
   */
  async reload(): Promise<void> {
    if (this.showing > 0) return;
    // The overview redraws only if its answer changed, keeping the table's sort, filter and page.
    if (this.view instanceof OverviewView) return this.view.reload();
    const {state, data} = this;
    const b = state.comparing ? state.cmp : null;
    if (!data.runs || !data.cachedReport(state.a) || (b && !data.cachedComparison(state.a, b))) return this.show();
    const shown = this.shows.signal;
    const changed = await data.refresh(state.a, b, () => shown.aborted);
    if (changed) await this.show();
  }

  setTheme(theme: Theme): void {
    document.documentElement.dataset.theme = theme;
    this.view?.update();
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
    const signal = this.shows.begin();
    const stale = () => signal.aborted;
    const {state, data} = this;
    this.setStatus('loading', notice('loading', 'Loading…'));
    try {
      const runs = await data.loadRuns();
      if (stale()) return;
      const runNames = runs.map((r) => r.run);
      if (!runNames.includes(state.sel.run) && runNames.length > 1) {
        state.set('run', await this.pickDefaultRun(runNames, stale));
        if (stale()) return;
      }
      this.fillSelect(this.selectors.run, runNames, 'run', this.runLabels());
      if (!runs.length) {
        this.fillSelect(this.selectors.host, [], 'host');
        this.fillSelect(this.selectors.allocator, [], 'allocator');
        this.fillSelect(this.selectors.module, [], 'module');
        this.fillCompare(runNames);
        this.setStatus('empty', noProfilesFound(data.formats));
        this.updateLinks();
        return;
      }
      this.fillSelect(this.selectors.host, this.hostChoices(), 'host', ALL_HOSTS_LABEL);
      this.fillCompare(runNames);
      if (state.sel.host === ALL_HOSTS) return this.showOverview();
      if (!data.cachedReport(state.a)) {
        const {run, host} = state.sel;
        this.content.replaceChildren(notice('loading', `Analysing ${run}${host ? ` (${host})` : ''}… (a large profile takes a few seconds the first time)`));
        await data.report(state.a);
        if (stale()) return;
        this.fillSelect(this.selectors.run, runNames, 'run', this.runLabels());
        this.fillCompare(runNames);
      }
      if (state.comparing && !data.cachedComparison(state.a, state.cmp)) {
        this.content.replaceChildren(notice('loading', `Comparing ${state.sel.run} (A) with ${state.cmp.run} (B)…`));
        try {
          await data.comparison(state.a, state.cmp);
        } catch (err) {
          // A's report was read above: a file the comparison cannot read is B's.
          if (!stale() && err instanceof ApiError && err.status === 422) return this.showUnreadable(err.message, state.cmp);
          throw err;
        }
        if (stale()) return;
        // B's own report too (analysed by the comparison already): its out-of-memory error leads the comparison.
        await data.report(state.cmp).catch(() => undefined);
        if (stale()) return;
        this.fillCompare(runNames);
      }
      this.render();
      void this.scanRuns(runs);
    } catch (err) {
      if (stale()) return;
      if (err instanceof ApiError && err.status === 422) {
        this.showUnreadable(err.message);
        if (this.data.runs) void this.scanRuns(this.data.runs);
        return;
      }
      this.setStatus('error', notice('error', el('p', {}, el('strong', {}, 'Could not load: '), errorMessage(err))));
      this.updateLinks();
    }
  }

  /** The selected run's (or host's) file could not be read: said in its place; the run list marks it, the others stay open. */
  private showUnreadable(message: string, side: {run: string; host: string} = this.state.sel): void {
    const runNames = (this.data.runs ?? []).map((r) => r.run);
    this.fillSelect(this.selectors.run, runNames, 'run', this.runLabels());
    this.fillCompare(runNames);
    // Nothing was read: no allocator or module to offer (the selectors are hidden, not left empty).
    this.fillSelect(this.selectors.allocator, [], 'allocator');
    this.fillSelect(this.selectors.module, [], 'module');
    const {run, host} = side;
    const what = this.data.hostsOf(run).length > 1 ? `host ${host} of run ${run}` : `run ${run}`;
    const shown = notice(
      'error',
      el('p', {}, el('strong', {}, `Could not read the profile of ${what}: `), message),
      el('p', {}, runNames.length > 1 ? 'The other runs are analysed as usual: choose one above.' : 'Write the file again, or capture anew.'),
    );
    shown.dataset.unreadable = run;
    this.setStatus('error', shown);
    this.updateLinks();
  }

  /** A run of several hosts offers (and opens on) its pod overview, host ALL_HOSTS; not while comparing. */
  private hostChoices(): string[] {
    const hosts = this.data.hostsOf(this.state.sel.run);
    return hosts.length > 1 && !this.state.comparing ? [ALL_HOSTS, ...hosts] : hosts;
  }

  /** The pod overview; a click on a row opens that host and allocator. */
  private showOverview(): void {
    this.fillSelect(this.selectors.allocator, [], 'allocator');
    this.fillSelect(this.selectors.module, [], 'module');
    this.state.save();
    this.updateLinks();
    this.view?.destroy();
    this.view = new OverviewView({
      cache: this.data,
      run: this.state.sel.run,
      onOpen: (row) => {
        this.state.set('host', row.host);
        this.state.set('allocator', row.memory_id ?? '');
        void this.show();
      },
    });
    this.content.replaceChildren(this.view.element);
    this.view.mount();
    this.setStatus('ready');
  }

  /**
   * With no run asked for, opens the first run that ran out of memory, else
   * the first that leaks, else the first with a finding of the static view:
   * reports are fetched in order for a few seconds at most, else the first
   * run is shown.
   */
  private async pickDefaultRun(runs: string[], stale: () => boolean): Promise<string> {
    const deadline = Date.now() + PICK_BUDGET_MS;
    let leaking = '';
    let found: string | undefined;
    for (const [i, run] of runs.entries()) {
      if (Date.now() > deadline) break;
      this.content.replaceChildren(notice('loading', `Looking for a run that ran out of memory or leaks… (analysing ${i + 1} of ${runs.length}: ${run})`));
      try {
        const report = await this.data.report({run, host: this.data.hostsOf(run)[0] ?? ''});
        if (stale()) return '';
        // A run that died out of memory is the one to look at first: what held the memory then.
        if (this.data.outOfMemory().has(run)) return run;
        if (!leaking && report.runs.some((r) => r.verdict === 'leak')) leaking = run;
        if (!found && this.data.findings().get(run)) found = run;
      } catch {
        // shown when that run is opened
      }
    }
    return leaking || found || runs[0];
  }

  /**
   * Once a view is shown, analyses the runs not yet opened, one request at a
   * time and only while the tab is not fetching a view of its own, so that
   * the run list marks each run's verdict, finding or unreadable file and
   * Compare drops the unreadable ones without the user opening each. Stops
   * when the run list is fetched anew (a reload): the next view starts over,
   * skipping what is still cached. A run of several hosts is left to its pod
   * overview.
   */
  private async scanRuns(runs: RunEntry[]): Promise<void> {
    if (this.scanning === runs) return;
    this.scanning = runs;
    const current = () => this.scanning === runs && this.data.runs === runs;
    try {
      for (const {run, hosts} of runs) {
        if (hosts.length !== 1) continue;
        while (current() && this.showing > 0) await new Promise((resolve) => setTimeout(resolve, SCAN_PAUSE_MS));
        if (!current()) return;
        const side = {run, host: hosts[0]};
        if (this.data.cachedReport(side) || this.data.unreadableHosts(run).length) continue;
        await this.data.report(side).catch(() => undefined);
        // A view being fetched fills the selectors itself when it is done.
        if (!current() || this.showing > 0) continue;
        this.refillRunChoices(runs);
      }
    } finally {
      if (this.scanning === runs) this.scanning = null;
    }
  }

  /**
   * The run select's labels and Compare's choices, from what the scan has
   * learnt. Refilling a select the user has open would close it under the
   * pointer: while one has the focus, they are refilled when it loses it.
   */
  private refillRunChoices(runs: RunEntry[]): void {
    const open = [this.selectors.run, this.compareSelectors.run].find((select) => select === document.activeElement);
    if (open) {
      if (!this.refillOnBlur) {
        this.refillOnBlur = true;
        open.addEventListener('blur', () => {
          this.refillOnBlur = false;
          // Unless the run list was fetched anew or a view is being fetched: each fills the selectors itself.
          if (this.data.runs === runs && this.showing === 0) this.refillRunChoices(runs);
        }, {once: true});
      }
      return;
    }
    const runNames = runs.map((r) => r.run);
    this.fillSelect(this.selectors.run, runNames, 'run', this.runLabels());
    this.fillCompare(runNames);
  }

  private runLabels(): Map<string, string> {
    const labels = new Map<string, string>();
    const findings = this.data.findings();
    for (const [run, verdict] of this.data.verdicts()) {
      // With several hosts, a verdict is only the run's when every host was analysed.
      if (this.data.hostsOf(run).length > 1) continue;
      // A capture of a run with a history: its verdict is its own, not the run's (the history's banner has that).
      const own = captureCount(this.data.runs ?? [], run) > 1 ? 'on its own: ' : '';
      // A run that cannot be judged over time but whose static view flags a buffer is told apart from a clean one.
      const found = findings.get(run) ?? 0;
      labels.set(run, `${run} (${own}${VERDICT_LABEL[verdict].toLowerCase()}${found ? `, ${countOf(found, 'finding')}` : ''})`);
    }
    for (const run of this.data.outOfMemory()) {
      if (this.data.hostsOf(run).length <= 1) labels.set(run, `${run} (ran out of memory)`);
    }
    for (const {run, hosts} of this.data.runs ?? []) {
      const unreadable = this.data.unreadableHosts(run).length;
      if (!unreadable) continue;
      labels.set(run, unreadable === hosts.length ? `${run} (not readable)` : `${run} (${unreadable} of ${countOf(hosts.length, 'host')} not readable)`);
    }
    return labels;
  }

  /** Fills a selector; keeps the selected value if offered, else `fallback`, else the first. */
  private fillSelect(select: HTMLSelectElement, values: string[], key: keyof Selection, labels?: Map<string, string>, fallback?: string): void {
    const wanted = this.state.sel[key];
    const value = values.includes(wanted) ? wanted : (fallback ?? values[0] ?? '');
    this.state.set(key, value);
    select.replaceChildren(...values.map((v) => option(v, labels?.get(v) ?? v, v === value)));
    if (!values.length) select.append(option('', key === 'module' ? 'no modules' : '—', true));
    select.disabled = values.length <= 1;
    // A selector with nothing to choose from is not shown (its label with it); the module's follows its format too.
    const label = select.closest('label');
    if (label && key !== 'module') label.hidden = !values.length;
    else if (label && !values.length) label.hidden = true;
  }

  /**
   * "Compare with…": every run (a run with itself compares two of its hosts),
   * and a run of the URL that is no longer listed, so that its error shows.
   */
  private fillCompare(runNames: string[]): void {
    const {run: select, host: hostSelect} = this.compareSelectors;
    const {state} = this;
    const labels = this.runLabels();
    // A run none of whose hosts can be read has nothing to compare: not offered (unless it is the one chosen).
    const readable = runNames.filter((r) => r === state.cmp.run || this.data.unreadableHosts(r).length < this.data.hostsOf(r).length);
    const names = state.comparing && !runNames.includes(state.cmp.run) ? [...readable, state.cmp.run] : readable;
    select.replaceChildren(
      option('', 'none (this run alone)', !state.comparing),
      ...names.map((v) => option(v, runNames.includes(v) ? (labels.get(v) ?? v) : `${v} (not found)`, v === state.cmp.run)),
    );
    select.disabled = !runNames.length;
    const hosts = this.data.hostsOf(state.cmp.run);
    if (hosts.length && !hosts.includes(state.cmp.host)) state.setCompareHost(hosts.includes(state.sel.host) ? state.sel.host : hosts[0]);
    hostSelect.replaceChildren(...hosts.map((h) => option(h, h, h === state.cmp.host)));
    if (!hosts.length) hostSelect.append(option(state.cmp.host, state.cmp.host || '—', true));
    hostSelect.disabled = hosts.length <= 1;
    this.compareHostLabel.hidden = !state.comparing;
    this.swapButton.hidden = !state.comparing;
    this.runLabel.textContent = state.comparing ? 'Run A' : 'Run';
    this.root.dataset.compare = state.comparing ? 'on' : 'off';
  }

  private render(): void {
    const {state, data} = this;
    const report = data.cachedReport(state.a);
    const run = report?.runs.find((r) => r.run === state.sel.run) ?? report?.runs[0];
    if (!report || !run) {
      this.setStatus('error', notice('error', `The report has no run named ${state.sel.run}.`));
      return;
    }
    const host = run.hosts.find((h) => h.host === state.sel.host) ?? run.hosts[0];
    if (!host) {
      this.setStatus('empty', notice('empty', `Run ${run.run} has no hosts.`));
      return;
    }
    // A link may name the allocator by its label; the selector keys it by memory id.
    const named = host.allocators.find((a) => a.allocator === state.sel.allocator && allocatorKey(a) !== state.sel.allocator);
    if (named) state.set('allocator', allocatorKey(named));
    const opening = defaultAllocator(host);
    const labels = new Map(host.allocators.map((a) => [allocatorKey(a), `${allocatorLabel(a)} (${VERDICT_LABEL[a.verdict].toLowerCase()})`]));
    this.fillSelect(this.selectors.allocator, host.allocators.map(allocatorKey), 'allocator', labels, opening && allocatorKey(opening));
    const modules = host.modules ?? [];
    this.fillSelect(this.selectors.module, modules.map(moduleKey), 'module', new Map(modules.map((m) => [moduleKey(m), shortProgram(moduleKey(m))])));
    this.moduleLabel.hidden = !host.format_hints.static_modules || !modules.length;
    const allocator = host.allocators.find((a) => allocatorKey(a) === state.sel.allocator) ?? null;
    state.save();
    this.updateLinks();
    this.view?.destroy();
    const comparison = state.comparing ? data.cachedComparison(state.a, state.cmp) : undefined;
    // The static view is one run's: its selector waits while comparing.
    if (comparison) this.selectors.module.disabled = true;
    this.view = comparison
      ? new CompareView({
          cache: data,
          comparison,
          a: {...state.sel},
          allocator,
          b: {...state.cmp},
          limits: report.limits,
          hostOf: (side, hostName) => {
            const sel = side === 'a' ? state.a : state.cmp;
            return data.cachedReport(sel)?.runs.find((r) => r.run === sel.run)?.hosts.find((h) => h.host === hostName);
          },
        })
      : new RunView({
          cache: data,
          sel: {...state.sel},
          run,
          host,
          allocator,
          module: modules.find((m) => moduleKey(m) === state.sel.module),
          allocation: state.allocation,
          reveal: this.revealStatic,
          sites: this.siteLinks(host),
          limits: report.limits,
          onPickAllocator: (key) => {
            this.selectors.allocator.value = key;
            this.state.set('allocator', key);
            void this.show();
          },
          history: this.historyOf(state.sel.run),
          onOpenCapture: ({capture, host, allocator}) => {
            // As choosing the session in the run selector, on the host and allocator of the series clicked.
            this.state.set('run', capture);
            if (this.data.hostsOf(capture).includes(host)) this.state.set('host', host);
            this.state.set('allocator', allocator);
            void this.show();
          },
        });
    this.revealStatic = false;
    this.content.replaceChildren(this.view.element);
    this.view.mount();
    this.setStatus('ready');
  }

  /** The session's TensorBoard run and its number of captures (sessions in the run list), when there are several. */
  private historyOf(session: string): {run: string; captures: number} | null {
    const captures = captureCount(this.data.runs ?? [], session);
    return captures > 1 ? {run: tensorboardRun(session), captures} : null;
  }

  /**
   * The Where cells' links: a site's program buffer opens the program in the
   * static view (memory space 0 when the program has several) with its
   * allocation selected, when the host lists the program.
   */
  private siteLinks(host: HostReport): SiteLinks {
    const moduleOf = (site: Site): ModuleSummary | undefined => {
      const named = (host.modules ?? []).filter((m) => m.name === site.program);
      return named.find((m) => !m.memory_space) ?? named[0];
    };
    return {
      href: (site) => {
        const module = moduleOf(site);
        return module ? this.state.urlWith(moduleKey(module), site.allocation) : null;
      },
      open: (site) => {
        const module = moduleOf(site);
        if (!module) return;
        this.state.selectAllocation(moduleKey(module), site.allocation);
        this.revealStatic = true;
        void this.show();
      },
    };
  }

  /** The selected host's report, once fetched (not for the pod overview). */
  private currentHost(): HostReport | undefined {
    const {state} = this;
    const run = this.data.cachedReport(state.a)?.runs.find((r) => r.run === state.sel.run);
    return run?.hosts.find((h) => h.host === state.sel.host);
  }

  /** Links into XProf's tools, which read only XProf's own profiles: none for a host of another format. */
  private updateLinks(): void {
    const {run, host} = this.state.sel;
    this.links.replaceChildren();
    const shown = this.currentHost();
    if (!run || !shown?.format_hints.xprof_tools || !sameOriginParent()) return;
    const link = (text: string, href: string) => el('a', {href, target: '_top', rel: 'noopener'}, text);
    this.links.append(link('Open in XProf Memory Profile', xprofUrl('memory_profile', run, host)));
    const module = shown.modules?.find((m) => moduleKey(m) === this.state.sel.module);
    if (module) this.links.append(link('Open in XProf Memory Viewer', xprofUrl('memory_viewer', run, host, module.name)));
  }
}
