// The frontend's TypeScript sources bundled in memory by esbuild and imported,
// for tests of pure functions that need no browser.

import {dirname, join} from 'node:path';
import {fileURLToPath} from 'node:url';
import * as esbuild from 'esbuild';

export const SRC = join(dirname(fileURLToPath(import.meta.url)), '..', 'src');
/** The case files that the frontend's and the Python package's shared logic both answer. */
export const REPO_CASES = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'tests', 'cases');

/** Imports `entry` (TypeScript re-exports relative to src/) as one module. */
export async function importSources(entry) {
  const out = await esbuild.build({
    stdin: {contents: entry, resolveDir: SRC, loader: 'ts'},
    bundle: true,
    format: 'esm',
    write: false,
    platform: 'neutral',
    loader: {'.css': 'text'},
    // uPlot touches `window` when loaded; the functions under test do not need it.
    plugins: [
      {
        name: 'stub-uplot',
        setup(build) {
          build.onResolve({filter: /^uplot$/}, () => ({path: 'uplot', namespace: 'stub'}));
          build.onLoad({filter: /.*/, namespace: 'stub'}, () => ({contents: 'export default {};', loader: 'js'}));
        },
      },
    ],
  });
  return import(`data:text/javascript;base64,${Buffer.from(out.outputFiles[0].text).toString('base64')}`);
}
