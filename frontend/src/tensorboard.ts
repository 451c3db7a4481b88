// The TensorBoard page around the tab: its iframe plugin message protocol,
// its dark mode, its URL hash and links into XProf. (Not the profiled hosts.)
// Written against TensorBoard's `experimental` protocol:
//  - the plugin frame posts the string "experimental.bootstrap" to window.parent with
//    a MessagePort; all further traffic goes over that port;
//  - each message is a JSON string {type, id, payload, error, isReply};
//  - a message that is not a reply must be answered with isReply=true and the
//    same type and id (the page awaits every frame's answer to a broadcast);
//  - the page broadcasts "experimental.DataReloaded" after each data reload
//    (its reload button, or auto-reload), and answers
//    "experimental.GetURLPluginData" with the `p.<plugin>.<key>` entries of
//    its URL hash, stripped of that prefix.

const VERSION = 'experimental';
export const DATA_RELOADED = `${VERSION}.DataReloaded`;
export const GET_URL_DATA = `${VERSION}.GetURLPluginData`;
export const PLUGIN_NAME = 'leakfinder';

interface Message {
  type: string;
  id: number;
  payload: unknown;
  error: string | null;
  isReply: boolean;
}

type Listener = (payload: unknown) => unknown;

export class TensorBoardChannel {
  private nextId = 0;
  private readonly waiting = new Map<number, {resolve: (v: unknown) => void; reject: (e: Error) => void}>();
  private readonly listeners = new Map<string, Listener>();
  private readonly port: MessagePort | null = null;

  constructor(page: Window | null) {
    if (!page || page === window) return;
    const channel = new MessageChannel();
    this.port = channel.port1;
    this.port.addEventListener('message', (event) => void this.onMessage(event));
    this.port.start();
    page.postMessage(`${VERSION}.bootstrap`, '*', [channel.port2]);
  }

  get connected(): boolean {
    return this.port !== null;
  }

  listen(type: string, listener: Listener): void {
    this.listeners.set(type, listener);
  }

  /** Sends a request; resolves with the page's answer, or null after `timeoutMs`. */
  request(type: string, payload: unknown = null, timeoutMs = 1500): Promise<unknown> {
    if (!this.port) return Promise.resolve(null);
    const id = this.nextId++;
    this.post({type, id, payload, error: null, isReply: false});
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        resolve(null);
      }, timeoutMs);
      this.waiting.set(id, {
        resolve: (v) => {
          clearTimeout(timer);
          resolve(v);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
    });
  }

  private post(message: Message): void {
    this.port?.postMessage(JSON.stringify(message));
  }

  private async onMessage(event: MessageEvent): Promise<void> {
    let message: Message;
    try {
      message = JSON.parse(String(event.data)) as Message;
    } catch {
      return;
    }
    if (message.isReply) {
      const waiter = this.waiting.get(message.id);
      if (!waiter) return;
      this.waiting.delete(message.id);
      if (message.error) waiter.reject(new Error(String(message.error)));
      else waiter.resolve(message.payload);
      return;
    }
    let payload: unknown = null;
    let error: string | null = null;
    const listener = this.listeners.get(message.type);
    if (listener) {
      try {
        payload = (await listener(message.payload)) ?? null;
      } catch (e) {
        error = e instanceof Error ? e.message : String(e);
      }
    }
    this.post({type: message.type, id: message.id, payload, error, isReply: true});
  }
}

/** TensorBoard's window when the tab runs in its plugin iframe (same origin). */
export function sameOriginParent(): Window | null {
  try {
    if (window.parent && window.parent !== window && window.parent.location.origin === window.location.origin) {
      return window.parent;
    }
  } catch {
    // cross-origin parent: not TensorBoard
  }
  return null;
}

// ---- theme ---------------------------------------------------------------

export type Theme = 'light' | 'dark';

/**
 * Follows TensorBoard's dark mode (the `dark-mode` class it toggles on its
 * <body>) when embedded, else the browser's prefers-color-scheme.
 */
export function watchTheme(onChange: (theme: Theme) => void): Theme {
  const page = sameOriginParent();
  const media = window.matchMedia('(prefers-color-scheme: dark)');
  const current = (): Theme => {
    if (page?.document?.body) return page.document.body.classList.contains('dark-mode') ? 'dark' : 'light';
    return media.matches ? 'dark' : 'light';
  };
  let theme = current();
  const update = () => {
    const next = current();
    if (next !== theme) {
      theme = next;
      onChange(theme);
    }
  };
  media.addEventListener('change', update);
  if (page?.document?.body) {
    new MutationObserver(update).observe(page.document.body, {attributes: true, attributeFilter: ['class']});
  }
  return theme;
}

// ---- URL state -----------------------------------------------------------

/**
 * The view's state lives in TensorBoard's URL hash as `p.leakfinder.<key>`
 * entries (the keys TensorBoard hands back through GetURLPluginData), so a
 * copied link reopens the same view. Standalone, it lives in our own hash.
 */
export function readHashState(hash: string): Record<string, string> {
  const out: Record<string, string> = {};
  const prefix = `p.${PLUGIN_NAME}.`;
  for (const part of hash.replace(/^#/, '').split('&')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    let key: string;
    let value: string;
    try {
      key = decodeURIComponent(part.slice(0, eq));
      value = decodeURIComponent(part.slice(eq + 1));
    } catch {
      continue;
    }
    if (key.startsWith(prefix)) out[key.slice(prefix.length)] = value;
  }
  return out;
}

export function writeHashState(hash: string, state: Record<string, string>): string {
  const prefix = `p.${PLUGIN_NAME}.`;
  const kept = hash
    .replace(/^#/, '')
    .split('&')
    .filter((part) => {
      if (!part) return false;
      const eq = part.indexOf('=');
      if (eq < 0) return true;
      try {
        return !decodeURIComponent(part.slice(0, eq)).startsWith(prefix);
      } catch {
        return true;
      }
    });
  for (const [key, value] of Object.entries(state)) {
    if (value) kept.push(`${encodeURIComponent(prefix + key)}=${encodeURIComponent(value)}`);
  }
  return kept.join('&');
}

export async function loadUrlState(channel: TensorBoardChannel): Promise<Record<string, string>> {
  const page = sameOriginParent();
  if (channel.connected) {
    const fromPage = await channel.request(GET_URL_DATA, {pluginName: PLUGIN_NAME}).catch(() => null);
    if (fromPage && typeof fromPage === 'object' && Object.keys(fromPage).length) {
      return Object.fromEntries(Object.entries(fromPage as Record<string, unknown>).map(([k, v]) => [k, String(v)]));
    }
  }
  return readHashState((page ?? window).location.hash);
}

export function saveUrlState(state: Record<string, string>): void {
  const target = sameOriginParent() ?? window;
  try {
    const url = new URL(target.location.href);
    const next = writeHashState(url.hash, state);
    if (url.hash.replace(/^#/, '') === next) return;
    url.hash = next;
    target.history.replaceState(target.history.state, '', url.toString());
  } catch {
    // a sandboxed or cross-origin page: the view simply is not linkable
  }
}

/** The address of the page showing `state`: TensorBoard's (or this page's) URL with its hash entries replaced. */
export function stateUrl(state: Record<string, string>): string {
  const target = sameOriginParent() ?? window;
  try {
    const url = new URL(target.location.href);
    url.hash = writeHashState(url.hash, state);
    return url.toString();
  } catch {
    return `#${writeHashState('', state)}`;
  }
}

// ---- links into XProf ----------------------------------------------------

/**
 * A link that opens `tool` of XProf's Profile plugin on the same run.
 * XProf's frontend reads `run`, `tag` (the tool), `host` and `module_name`
 * from the TensorBoard page's query string (window.parent.location.search)
 * and is selected by the `#profile` hash; this mirrors its own createToolUrl.
 */
export function xprofUrl(tool: 'memory_profile' | 'memory_viewer', run: string, host: string, module?: string): string {
  const top = sameOriginParent() ?? window;
  const params = new URLSearchParams();
  params.set('run', run);
  params.set('tag', tool);
  if (host) params.set('host', host);
  if (module) params.set('module_name', module);
  return `${top.location.origin}${top.location.pathname}?${params.toString()}#profile`;
}
