// The one shape of a panel: an element plus a lifecycle. What a panel starts
// (uPlot charts, observers, requests, a listener on something that outlives
// it) it registers in its Disposables, so that destroy() releases all of it;
// a view is a panel made of panels, and destroys them with itself. A listener
// on the panel's own elements goes with them and needs no registering.

/** A panel of the tab: built by its constructor (or factory), then mounted, redrawn and destroyed by its view. */
export interface Panel {
  readonly element: HTMLElement;
  /** Starts the panel's own requests; called once, after its element is in the page (its width is known then). */
  mount(): void;
  /** Redraws with the current theme's colours (the theme changed); data already fetched is not fetched again. */
  update(): void;
  /** Releases everything the panel holds: charts, observers, listeners, requests. Called once; the element is dropped after. */
  destroy(): void;
}

/** A panel that holds what it starts (charts, requests...) in `owned`: its destroy() releases all of it. */
export abstract class OwningPanel implements Panel {
  abstract readonly element: HTMLElement;
  protected readonly owned = new Disposables();
  abstract mount(): void;
  abstract update(): void;
  destroy(): void {
    this.owned.dispose();
  }
}

/** A panel that only shows what it was built with: nothing to start, redraw or release. */
export function staticPanel(element: HTMLElement): Panel {
  return {element, mount() {}, update() {}, destroy() {}};
}

/**
 * How many of each resource the tab holds now (requests: those run() and not
 * yet settled): the browser tests read them (`window.tbLeakfinder.live`) to
 * check that switching runs and allocators leaks nothing.
 */
export const live = {plots: 0, observers: 0, requests: 0};

type Counted = keyof typeof live;

/** What a panel owns, released last-in first-out by dispose(); what is added after dispose() is released at once. */
export class Disposables {
  private readonly stack: (() => void)[] = [];
  private disposed = false;

  /** Runs `release` on dispose(), counted under `kind` while held. */
  add(release: () => void, kind?: Counted): void {
    if (kind) live[kind]++;
    const counted = () => {
      if (kind) live[kind]--;
      release();
    };
    if (this.disposed) counted();
    else this.stack.push(counted);
  }

  /** Owns `thing` (a chart, a child panel): its destroy() runs on dispose(). */
  own<T extends {destroy(): void}>(thing: T): T {
    this.add(() => thing.destroy());
    return thing;
  }

  /** Keeps `observer` (a ResizeObserver...) until dispose(), which disconnects it. */
  observe<O extends {disconnect(): void}>(observer: O): O {
    this.add(() => observer.disconnect(), 'observers');
    return observer;
  }

  /** A latest-only request of this panel: dispose() aborts what it has in flight. */
  latest(): LatestRequest {
    const request = new LatestRequest();
    this.add(() => request.cancel());
    return request;
  }

  dispose(): void {
    this.disposed = true;
    while (this.stack.length) this.stack.pop()?.();
  }
}

/** What LatestRequest.run gives for a request that a newer one (or cancel) superseded: the caller drops it. */
export const STALE: unique symbol = Symbol('stale');

/**
 * Requests of which only the newest counts: each run() aborts the one before
 * it, and an answer (or error) that arrives after a newer run() or cancel() is
 * dropped, even if its fetch ignored the abort.
 */
export class LatestRequest {
  private controller: AbortController | null = null;

  /** Starts a new request: aborts the one before and returns the new one's signal, aborted once superseded. */
  begin(): AbortSignal {
    this.cancel();
    this.controller = new AbortController();
    return this.controller.signal;
  }

  /** The newest request's signal (one is begun if none was): aborted once a newer one begins, or on cancel(). */
  get signal(): AbortSignal {
    return this.controller?.signal ?? this.begin();
  }

  /**
   * Runs `request` as the newest: its answer, or STALE when superseded before
   * it settled. Its errors are thrown only while it is the newest; once
   * superseded, its error (the abort's, typically) is STALE too.
   */
  async run<T>(request: (signal: AbortSignal) => Promise<T>): Promise<T | typeof STALE> {
    const signal = this.begin();
    live.requests++;
    try {
      const answer = await request(signal);
      return signal.aborted ? STALE : answer;
    } catch (err) {
      if (signal.aborted) return STALE;
      throw err;
    } finally {
      live.requests--;
    }
  }

  /** Aborts the newest request: its answer, if still to come, is STALE (and `signal` stays aborted until the next begin()). */
  cancel(): void {
    this.controller?.abort();
  }
}

/** The panels of a view: mounted, redrawn and destroyed together, in the order added. */
export class Panels {
  private readonly list: Panel[] = [];

  /** Adds `panel` to the view's; returns it. */
  add<P extends Panel>(panel: P): P {
    this.list.push(panel);
    return panel;
  }

  mount(): void {
    for (const panel of this.list) panel.mount();
  }

  update(): void {
    for (const panel of this.list) panel.update();
  }

  destroy(): void {
    for (const panel of this.list.splice(0)) panel.destroy();
  }
}
