// Tiny DOM helpers. Strings always become text nodes: profile-derived text
// (op names, shapes, run names) is never parsed as HTML.

export type Child = Node | string | number | null | undefined | false;
type Attrs = Record<string, string | number | boolean | null | undefined>;

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === 'class') node.className = String(value);
    else node.setAttribute(key, value === true ? '' : String(value));
  }
  append(node, ...children);
  return node;
}

export function append(parent: Node, ...children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === 'string' || typeof child === 'number' ? document.createTextNode(String(child)) : child);
  }
}

/** Where a long name may break: after these, so that `a/b.c_d:e,f` never breaks inside a word. */
const SEPARATORS = /([/\\._:,;=|@#\])}]+)/;

/**
 * Text that wraps only after a separator (a `<wbr>` after each run of them):
 * `jit(train_step)/jvp()/dot_general`, `model.py:57`, `f32[5,1024,1024,256]`.
 * Its text is the same; a word longer than the line still breaks as a last resort (CSS).
 */
export function breakable(text: string): DocumentFragment {
  const out = document.createDocumentFragment();
  const parts = text.split(SEPARATORS);
  parts.forEach((part, i) => {
    if (!part) return;
    out.append(part);
    if (i % 2 === 1 && i < parts.length - 1 && parts.slice(i + 1).some(Boolean)) out.append(document.createElement('wbr'));
  });
  return out;
}

/** A child as `breakable` text when it is a string. */
export function breakableChild(child: Child): Child {
  return typeof child === 'string' ? breakable(child) : child;
}

export function clear(node: Node): void {
  while (node.firstChild) node.removeChild(node.firstChild);
}

/** A sentence whose `code` is in backticks (a format's own words), as text and <code> elements. */
export function withCode(text: string): Child[] {
  return text
    .split('`')
    .map((part, k) => (k % 2 ? el('code', {}, part) : part))
    .filter((part) => part !== '');
}

/** A message shown in place of a panel: loading, empty or error. */
export function notice(kind: 'loading' | 'empty' | 'error', ...children: Child[]): HTMLElement {
  return el('div', {class: `lf-notice lf-notice-${kind}`, role: kind === 'error' ? 'alert' : 'status'}, ...children);
}

export function section(title: string, id: string, ...children: Child[]): HTMLElement {
  return el('section', {class: 'lf-panel', 'aria-labelledby': `${id}-title`, 'data-panel': id}, el('h2', {id: `${id}-title`}, title), ...children);
}

/** A CSS custom property of the document, e.g. cssVar('--lf-leak'). */
export function cssVar(name: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
