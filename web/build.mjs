// Builds the web page of `hogwild serve` into OUT (usage: node web/build.mjs OUT):
//   OUT/index.html, OUT/assets/app.js, OUT/assets/app.css, OUT/assets/<KaTeX fonts>.woff2
// esbuild bundles web/src/main.js with its npm packages (katex, markdown-it, dompurify; installed in
// tools/js/node_modules by scripts/setup.sh). Only the woff2 fonts are kept (every browser the page
// targets reads woff2). web/embed.cmake embeds OUT in the binary.
import { createRequire } from 'node:module';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const modules = resolve(here, '../tools/js/node_modules');
const require = createRequire(join(modules, 'noop.js'));
const esbuild = require('esbuild');

const out = process.argv[2];
if (!out) {
  console.error('usage: node web/build.mjs OUT_DIR');
  process.exit(2);
}
mkdirSync(join(out, 'assets'), { recursive: true });
await esbuild.build({
  entryPoints: { app: join(here, 'src/main.js') },
  bundle: true,
  minify: true,
  format: 'iife',
  target: ['es2020'],
  outdir: join(out, 'assets'),
  publicPath: '/assets',
  assetNames: '[name]-[hash]',
  nodePaths: [modules],
  loader: { '.woff2': 'file', '.woff': 'empty', '.ttf': 'empty' },
  logLevel: 'warning',
});
// The dropped font formats leave empty url()s in KaTeX's @font-face rules: remove them.
const css = join(out, 'assets/app.css');
writeFileSync(css, readFileSync(css, 'utf8').replace(/,url\(\) format\("(woff|truetype)"\)/g, ''));
copyFileSync(join(here, 'src/index.html'), join(out, 'index.html'));
