import { execFile } from 'node:child_process';
import { mkdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { bundleFileName, bundlingOptions } from '../lib/bundling.ts';
import { envNames } from '../lib/definitions.ts';
import { median } from './stats.ts';

const execFileAsync = promisify(execFile);

export interface BuiltBundle {
  id: string;
  entry: string;
  file: string;
  /** Size of the minified bundle alone, without its source map. */
  bytes: number;
  mapBytes: number;
  /** Largest inputs (by bytes in the output), to see what a heavy bundle carries. */
  largestInputs: { path: string; bytes: number }[];
  /** Modules the bundle imports at run time (externals such as `@aws-sdk/*`). */
  externalImports: string[];
}

/**
 * Builds one function the way `NodejsFunction` does with `bundlingOptions` (it runs the esbuild CLI
 * with `--bundle --target --platform=node --format --outfile=index.mjs --minify --sourcemap
 * --external:… --banner:js --main-fields`); the mapping below is the same, flag for flag.
 */
export const buildBundle = async (repoRoot: string, outDir: string, fn: { id: string; entry: string }) => {
  const dir = join(outDir, fn.id);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, bundleFileName);
  const result = await build({
    absWorkingDir: repoRoot,
    // Relative, as NodejsFunction passes it (the path feeds the minifier: same input, same bytes).
    entryPoints: [fn.entry],
    bundle: true,
    outfile: file,
    format: bundlingOptions.format,
    minify: bundlingOptions.minify,
    sourcemap: bundlingOptions.sourceMap,
    target: bundlingOptions.target,
    platform: bundlingOptions.platform,
    mainFields: [...bundlingOptions.mainFields],
    banner: { js: bundlingOptions.banner },
    external: [...bundlingOptions.externalModules],
    metafile: true,
    logLevel: 'warning',
  });
  const output = result.metafile.outputs[Object.keys(result.metafile.outputs).find((o) => o.endsWith('.mjs')) ?? ''];
  const largestInputs = Object.entries(output?.inputs ?? {})
    .map(([path, input]) => ({ path, bytes: input.bytesInOutput }))
    .sort((a, b) => b.bytes - a.bytes)
    .slice(0, 3);
  const externalImports = [...new Set((output?.imports ?? []).filter((i) => i.external).map((i) => i.path))];
  return {
    ...fn,
    file,
    externalImports,
    bytes: statSync(file).size,
    mapBytes: bundlingOptions.sourceMap ? statSync(`${file}.map`).size : 0,
    largestInputs,
  } satisfies BuiltBundle;
};

/**
 * Runs in a fresh Node: time from just before `import()` of the bundle to its settled module. With
 * more arguments, imports each of them instead (a bundle's externals alone, for comparison).
 */
const importTimer =
  'const t = performance.now(); const [first, ...more] = process.argv.slice(1);' +
  'if (more.length) { for (const s of more) await import(s); } else { const m = await import(first);' +
  "if (typeof m.handler !== 'function') throw new Error('no handler export'); }" +
  'console.log(performance.now() - t);';

/** What Lambda's environment gives the module at import, with dummy resource names. */
const importEnvironment = (nodeOptions: string) => ({
  PATH: process.env.PATH ?? '',
  HOME: process.env.HOME ?? '',
  NODE_OPTIONS: nodeOptions,
  AWS_REGION: 'us-east-1',
  AWS_ACCESS_KEY_ID: 'bench',
  AWS_SECRET_ACCESS_KEY: 'bench',
  [envNames.table]: 'bench-Data',
  [envNames.stepsQueueUrl]: 'http://127.0.0.1:9/000000000000/bench-Steps',
  [envNames.webhooksQueueUrl]: 'http://127.0.0.1:9/000000000000/bench-Webhooks',
  [envNames.bucket]: 'bench-library',
});

/**
 * Median over `runs` fresh `node` processes of the time `await import(bundle)` takes. Externals
 * (`@aws-sdk/*`) resolve from the repository's node_modules, which is why bundles are written inside
 * the repository. `nodeOptions` is the NODE_OPTIONS the function gets (the stack sets
 * `--enable-source-maps`).
 */
export const coldImportMs = async (
  file: string,
  runs: number,
  nodeOptions: string,
  /** When given, import these specifiers (resolved from the bundle's directory) instead of the bundle. */
  only: readonly string[] = [],
): Promise<number> => {
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const { stdout } = await execFileAsync(
      process.execPath,
      ['--input-type=module', '-e', importTimer, pathToFileURL(file).href, ...only],
      { env: importEnvironment(nodeOptions), timeout: 30_000, cwd: dirname(file) },
    );
    samples.push(Number(stdout.trim()));
  }
  return median(samples);
};
