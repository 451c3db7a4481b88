// Bundles src/index.ts into one ES module, tb_leakfinder/webapp/index.js.
//   node build.mjs          build into the package
//   node build.mjs --check  build into a temp file; fail if the committed copy differs
import * as esbuild from 'esbuild';
import {mkdtempSync, readFileSync, rmSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {dirname, join} from 'node:path';
import {fileURLToPath} from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const committed = join(here, '..', 'tb_leakfinder', 'webapp', 'index.js');
const check = process.argv.includes('--check');
const tmp = check ? mkdtempSync(join(tmpdir(), 'leakfinder-bundle-')) : null;
const outfile = check ? join(tmp, 'index.js') : committed;

await esbuild.build({
  entryPoints: [join(here, 'src', 'index.ts')],
  bundle: true,
  format: 'esm',
  target: 'es2020',
  minify: true,
  legalComments: 'eof',
  loader: {'.css': 'text'},
  outfile,
  logLevel: 'warning',
});

if (check) {
  const fresh = readFileSync(outfile);
  let old;
  try {
    old = readFileSync(committed);
  } catch {
    old = Buffer.alloc(0);
  }
  rmSync(tmp, {recursive: true, force: true});
  if (!fresh.equals(old)) {
    console.error(`${committed} differs from a fresh build of frontend/src: run "npm run build" in frontend/ and commit it.`);
    process.exit(1);
  }
  console.log('check-bundle: committed bundle matches a fresh build');
}
