// Who keeps a family's never-freed buffers alive (its holders, found by the capture helper inside the training
// process and read from the companion file) and why they are likely never freed (its cause, read from the profile
// alone), in the words the CLI uses (tb_leakfinder/views/text.py; tests/cases/holders.json holds both to them).

import type {Cause, CauseId, Family, Holder, HolderKind, HolderSearch} from './api';
import {breakable, type Child, el} from './dom';
import {countOf, formatBytes, formatCount, tensorAndChunks} from './format';
import {labelWithoutWhere} from './panels/families';

/** A holder's kind in words (text.py's HOLDER_KIND_WORDS). */
export const HOLDER_KIND_WORDS: Record<HolderKind, string> = {
  list: 'an element of a list',
  dict_entry: 'a dict entry',
  attribute: 'an attribute',
  class_attribute: 'a class attribute',
  default_argument: 'a mutable default argument',
  closure: 'a closure cell',
  frame_local: 'a local of a running function',
  global: 'a module-level name',
  module: "a module's parameter or submodule",
  buffer: "a module's registered buffer",
  autograd_graph: 'tensors an autograd graph saved',
  variable: 'a tf.Variable',
};

/** Each cause in a few words (text.py's CAUSE_TITLES); its section of the docs is CAUSES_PAGE#<id>. */
export const CAUSE_TITLES: Record<CauseId, string> = {
  graph_kept: 'the autograd graph is kept',
  regrown: 'one buffer regrown every step',
  optimizer_per_step: 'an optimizer made every step',
  modules_per_step: 'modules made every step',
  cache_per_step: 'a cache that gains an entry every step',
  variable_per_step: 'a tf.Variable made every step',
  recompile_per_step: 'a function compiled again every step',
};

/** Where each cause is explained, with a minimal example: in the project's docs, not served by the plugin. */
export const CAUSES_PAGE = 'docs/causes.md';

/**
 * "held by model.heads: ModuleList, 24 of 24 never-freed buffers, 6 MiB" (words.held_by): `count` of the family's
 * `of` buffers, their tensor bytes with the allocator's chunks beside them where they differ, as the family's own
 * figure; "at least" when the companion file did not list every buffer it keeps.
 */
export function heldBy(path: string, type: string, count: number, of: number, tensor: number, chunks: number, atLeast = false): string {
  const kept = `${atLeast ? 'at least ' : ''}${formatCount(count)} of ${countOf(of, 'never-freed buffer')}`;
  const [shown, allocated] = tensorAndChunks(tensor, chunks);
  return `held by ${path}: ${type ? `${type}, ` : ''}${kept}, ${shown}${allocated ? ` (${allocated} in chunks)` : ''}`;
}

/** After a holder matched by shape and dtype (text.py's SHAPE_MATCH_WORDS): its count and bytes are exact, its buffers are not. */
export const SHAPE_MATCH_WORDS = "matched by shape and dtype: which of that shape's buffers it keeps is not known";

/** The never-freed buffers no holder is named for, their shape and dtype being shared by more live objects (text.py's ambiguous_text). */
export function ambiguousText(count: number, bytes: number): string {
  const one = count === 1;
  return `${countOf(count, 'never-freed buffer')} (${formatBytes(bytes)}) ${one ? 'is' : 'are'} ambiguous: more live objects share ${one ? 'its' : 'their'} shape and dtype than there are buffers, so no holder is named`;
}

/** A text with its `code` spans (as the server's reasons quote a holder's path) as code elements, both breakable (dom.ts's withCode keeps words whole). */
export function breakableWithCode(text: string): Node[] {
  return text.split(/(`[^`]+`)/).map((part) => (part.length > 2 && part.startsWith('`') && part.endsWith('`') ? el('code', {}, breakable(part.slice(1, -1))) : breakable(part)));
}

/** The likely cause of a leaking allocator's top growing family, in a few words and its fix, for the banner. */
export function verdictCause(families: Family[]): HTMLElement | null {
  const cause = families.find((g) => g.kind === 'growing')?.cause;
  if (!cause) return null;
  return el(
    'div',
    {class: 'lf-verdict-cause', 'data-cause': cause.id},
    el('strong', {}, `Likely cause: ${CAUSE_TITLES[cause.id] ?? cause.id}.`),
    ' Fix: ',
    ...breakableWithCode(cause.fix),
    '. ',
    el('span', {class: 'lf-muted'}, `(The evidence is under the families; ${CAUSES_PAGE}#${cause.id} explains it.)`),
  );
}

/** One holder of `family`: its path as code, type, count and bytes; then its kind and where it was made. */
export function holderLine(h: Holder, family: Family): HTMLElement {
  const said = heldBy(`\`${h.path}\``, h.type, h.count, family.count, h.requested_bytes, h.chunk_bytes, !h.all_listed);
  const made = h.created
    ? [', made at ', el('code', {}, breakable(h.created)), ...(h.created_text ? [': ', el('code', {class: 'lf-line-text'}, h.created_text)] : [])]
    : [];
  return el(
    'li',
    {'data-holder': h.path, 'data-holder-kind': h.kind, 'data-holder-match': h.match},
    ...breakableWithCode(said[0]?.toUpperCase() + said.slice(1)),
    el('span', {class: 'lf-muted'}, ` (${HOLDER_KIND_WORDS[h.kind] ?? h.kind}`, ...made, ')', ...(h.match === 'shape' ? [` (${SHAPE_MATCH_WORDS})`] : [])),
  );
}

/**
 * How the search for holders went on a host, as the CLI's search_text says it; null when the capture helper did not
 * search (no companion file, or one without holders).
 */
export function searchText(search: HolderSearch | null): string | null {
  if (!search) return null;
  if (search.status === 'failed') return `the search failed (${search.warning || 'no reason given'}); no holder is known`;
  let text = `${search.status}, ${countOf(search.objects_visited, 'object')} in ${search.elapsed_s.toFixed(2)} s`;
  if (search.status === 'partial') text += ` (${search.warning || 'a bound was hit'}): the holders named are true, but there may be more`;
  if (search.unmatched_count) {
    text += `; ${countOf(search.unmatched_count, 'never-freed buffer')} (${formatBytes(search.unmatched_bytes)}) held by no reference it found`;
  }
  if (search.ambiguous_count) text += `; ${ambiguousText(search.ambiguous_count, search.ambiguous_bytes)}`;
  if (search.not_in_profile) text += `; ${countOf(search.not_in_profile, 'address', 'addresses')} its holders list are no never-freed buffer of this profile`;
  return text;
}

/** The note above the families: how the search for holders went (highlighted when it is not complete). */
export function searchNote(search: HolderSearch | null): HTMLElement | null {
  const text = searchText(search);
  if (!search || !text) return null;
  const complete = search.status === 'complete';
  return el(
    'p',
    {class: complete ? 'lf-muted' : 'lf-hint', role: complete ? null : 'note', 'data-holder-search': search.status},
    'Holders, found by the capture helper in the training process: ',
    text,
    '.',
  );
}

/** The likely cause in words: its title, the evidence, the fix, and the section of the docs that explains it. */
export function causeNodes(cause: Cause): Child[] {
  return [
    el('strong', {}, `Likely cause: ${CAUSE_TITLES[cause.id] ?? cause.id}`),
    ` (${cause.evidence}). `,
    el('span', {'data-fix': 'true'}, 'Fix: ', ...breakableWithCode(cause.fix), '. '),
    el('span', {class: 'lf-muted', 'data-doc': `${CAUSES_PAGE}#${cause.id}`}, `Explained, with an example, in the project's ${CAUSES_PAGE}, section ${cause.id}.`),
  ];
}

/** Whether a family has anything to say below its row: holders, a cause, or no holder where the search was cut short. */
export function hasDetail(g: Family, search: HolderSearch | null): boolean {
  return g.holders.length > 0 || g.cause !== null || missed(g, search);
}

/** A family with never-freed buffers and no holder, on a host whose search for holders was partial or failed. */
function missed(g: Family, search: HolderSearch | null): boolean {
  return search !== null && search.status !== 'complete' && g.holders.length === 0 && g.count > 0;
}

/**
 * What is said of a family below its row: who keeps its buffers, the line that made them, its likely cause (in full
 * on the first of `families` that has it, as the CLI says it once; the next ones name it).
 */
export function familyDetail(g: Family, search: HolderSearch | null, families: Family[] = []): HTMLElement {
  const parts: Child[] = [];
  if (g.holders.length) parts.push(el('ul', {class: 'lf-holders', 'aria-label': 'Holders'}, ...g.holders.map((h) => holderLine(h, g))));
  if (missed(g, search) && search) {
    const why = search.warning || 'no reason given';
    const said =
      search.status === 'failed'
        ? `No holder is known for these buffers: the search for holders failed (${why}).`
        : `No holder found for these buffers, but the search for holders was partial (${why}): a reference it did not reach may keep them.`;
    parts.push(el('p', {'data-holder-missed': search.status}, said));
  }
  if ((g.holders.length || g.cause) && g.where_text) {
    parts.push(el('p', {'data-where-text': 'true'}, 'Made at ', el('code', {}, breakable(g.where)), ': ', el('code', {class: 'lf-line-text'}, g.where_text)));
  }
  const cause = g.cause;
  if (cause) {
    const first = families.find((f) => f.cause?.id === cause.id && f.cause.evidence === cause.evidence);
    const said = first && first !== g ? [el('strong', {}, `Likely cause: ${CAUSE_TITLES[cause.id] ?? cause.id}`), ` (as for ${labelWithoutWhere(first.label, first.where)}).`] : causeNodes(cause);
    parts.push(el('p', {'data-cause': cause.id}, ...said));
  }
  return el('div', {class: 'lf-family-detail', 'data-family-detail': String(g.family)}, ...parts);
}
