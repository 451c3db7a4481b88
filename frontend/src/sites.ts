// Where buffers were made: the "Where" cell of the families, peak breakdown and
// buffers tables. The cell shows the line of code; its tooltip the user's
// Python frames and the program buffer it was matched to; a link next to it
// opens that program in the static view with the buffer's allocation selected.

import type {Site} from './api';
import {breakable, el} from './dom';
import {shortProgram} from './format';

/** Frames are innermost first: each is called from the next (views/text.py's CALLED_FROM). */
export const STACK_SEPARATOR = ' ← ';

/** A place the profile does not tell (the server's Site()). */
export const NO_SITE: Readonly<Site> = {
  context: '',
  program: '',
  buffer: '',
  allocation: -1,
  hlo_op: '',
  op_name: '',
  hlo_shape: '',
  source: '',
  match: '',
  near_by: '',
  candidates: [],
  stack: [],
  model_frame: '',
};

/** The Where column's header tooltip: "the line of code <what> made at; …". */
export function whereHelp(what: string): string {
  return `the line of code ${what} made at; hover for the Python stack and the program buffer, follow the link to that buffer in the static view`;
}

/**
 * Opens a site's program buffer in the static view. `href` is the link's
 * address (the tab's URL state with that module and allocation), null when
 * the host does not list the program; `open` shows it in place.
 */
export interface SiteLinks {
  href(site: Site): string | null;
  open(site: Site): void;
}

/** Whether the site names one buffer allocation of a program, which the static view can show. */
export function hasProgramBuffer(site: Site | undefined): site is Site {
  return !!site && site.program !== '' && site.allocation >= 0;
}

/** "output 0 of jit_dot(49)", "transfer to device, outside any program", … : what the site says of the program side. */
function programLine(site: Site): string {
  if (site.context === 'transfer') {
    return site.program && site.buffer ? `transfer to device, ${site.buffer} of ${site.program}` : 'transfer to device, outside any program';
  }
  if (site.context === 'outside') return 'outside any program';
  if (site.context !== 'program') return '';
  if (site.match === 'no_hlo') return `in ${site.program} (its HLO is not in the profile)`;
  if (site.match === 'none' || !site.buffer) return `in ${site.program}, no buffer of this size`;
  return `${site.buffer} of ${site.program}${site.allocation >= 0 ? ` (allocation ${site.allocation})` : ''}`;
}

/**
 * The innermost frame of the model's or the user's code first, the user's line that called it after, as the CLI
 * shows it: "Owlv2Attention.forward (modeling_owlv2.py:410) ← run.py:28 in main".
 */
export function whereText(where: string, site: Site | undefined): string {
  return [site?.model_frame ?? '', where].filter(Boolean).join(STACK_SEPARATOR);
}

/** The Where text as nodes: the innermost frame, then (muted) the user's line that called it. */
function whereNodes(where: string, site: Site | undefined): (Node | string)[] {
  const model = site?.model_frame ?? '';
  if (!model || !where) return [breakable(model || where)];
  return [breakable(model), el('span', {class: 'lf-where-caller', 'data-caller': where}, breakable(`${STACK_SEPARATOR}${where}`))];
}

/** The tooltip's lines: the stack, then the program buffer, its HLO op and shape, op name and source, and how sure the match is. */
export function siteLines(where: string, site: Site | undefined): string[] {
  const lines: string[] = [];
  const text = whereText(where, site);
  if (text) lines.push(text);
  if (!site) return lines;
  if (site.stack.length) lines.push(`stack: ${site.stack.join(STACK_SEPARATOR)}`);
  const program = programLine(site);
  if (program) lines.push(program);
  const hlo = [site.hlo_op, site.hlo_shape].filter(Boolean).join(' ');
  if (hlo) lines.push(hlo);
  if (site.op_name) lines.push(`op name: ${site.op_name}`);
  if (site.source) lines.push(`source: ${site.source}`);
  if (site.match === 'ambiguous' && site.candidates.length) lines.push(`ambiguous, one of: ${site.candidates.join('; ')}`);
  if (site.match === 'near') {
    lines.push('approximate: no buffer of the program has exactly this size and the nearest temporaries block is taken, or the program was found by its time alone');
  }
  return lines;
}

/**
 * The Where cell: the line of code, hover for the stack and the program
 * buffer. When the site names a program buffer the host lists, the line is a
 * link that opens it in the static view (the program's name when the line is
 * unknown). Empty when the profile tells nothing.
 */
export function whereCell(where: string, site: Site | undefined, links: SiteLinks | null): HTMLElement {
  const lines = siteLines(where, site);
  const href = hasProgramBuffer(site) && links ? links.href(site) : null;
  if (!hasProgramBuffer(site) || !links || href === null) {
    return el('span', {class: 'lf-where', 'data-where': where, title: lines.length ? lines.join('\n') : null}, ...whereNodes(where, site));
  }
  lines.push(`Click to open ${site.program} in the static view, allocation ${site.allocation} selected.`);
  const link = el(
    'a',
    {class: 'lf-site-link', href, target: '_top', 'data-site-link': 'true', 'data-program': site.program, 'data-allocation': String(site.allocation)},
    // A program's name, when no line names the buffer, reads as a program (code), not as a file.
    ...(whereText(where, site) ? whereNodes(where, site) : [el('code', {class: 'lf-program'}, breakable(shortProgram(site.program)))]),
  );
  link.addEventListener('click', (event) => {
    // The row under it may be selectable: the link opens the program, it does not select the row.
    event.stopPropagation();
    if (event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    links.open(site);
  });
  // Enter on the link follows it, and does not also select the row.
  link.addEventListener('keydown', (event) => event.stopPropagation());
  return el('span', {class: 'lf-where', 'data-where': where, title: lines.join('\n')}, link);
}
