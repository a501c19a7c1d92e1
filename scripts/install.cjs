#!/usr/bin/env node
/**
 * A checkout's install script (`npm install` in a clone). The published package has none: pack:all
 * removes it, and an installed copy builds with `npx flockml build`. It builds nothing when it need not:
 * - in a checkout (not under node_modules) it runs the source build, so contributors test their code;
 * - in an installed copy, when the prebuilt platform package (@flockml/linux-x64-gnu) is installed
 *   and loads, it prints one line and exits: nothing is compiled, no compiler is needed;
 * - FLOCKML_BUILD_FROM_SOURCE=1 forces the source build;
 * - otherwise (no prebuilt for this platform, or optional dependencies omitted) it runs the source
 *   build, which refuses with a reason on unsupported platforms or when cmake-js is not installed.
 * The package also works with install scripts turned off: lib/native_loader.ts finds the prebuilt.
 */
'use strict';
const { spawnSync } = require('node:child_process');
const { existsSync } = require('node:fs');
const { join, resolve, sep } = require('node:path');

const root = resolve(__dirname, '..');
const installed = root.split(sep).includes('node_modules');
const forced = process.env.FLOCKML_BUILD_FROM_SOURCE === '1';

function build() {
  const r = spawnSync(process.execPath, [join(__dirname, 'build_addon.cjs')], { stdio: 'inherit' });
  process.exit(r.status ?? 1);
}

if (!installed || forced) build();

// The compiled loader ships in dist/; it is what `import 'flockml'` will run, so ask it.
const loader = join(root, 'dist', 'lib', 'native_loader.js');
if (!existsSync(loader)) build();
try {
  const { source } = require(loader).loadAddon();
  if (source.kind === 'prebuilt') {
    console.error(`flockml: using the prebuilt addon ${source.package} (no build needed)`);
    process.exit(0);
  }
} catch (e) {
  console.error(`flockml: no prebuilt addon fits this machine, building from source.\n${e.message}`);
}
build();
