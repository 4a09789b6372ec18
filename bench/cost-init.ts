/**
 * INIT time per cold start, for the cost model (bench/cost-retained.ts): each function a run
 * invokes, built as deployed (`lib/bundling.ts`), imported in a fresh `node` with its Lambda
 * environment (bench/bundles.ts `coldStart`, no event), plus the start of a bare `node` (the
 * runtime's own start, which Lambda's INIT also holds). Wall time, as Lambda bills it: on a loaded
 * machine an upper bound.
 */
import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { promisify } from 'node:util';
import { workers } from '../lib/workers.ts';
import type { LocalResources } from '../local/provision.ts';
import { routes } from '../platform/routes.ts';
import { buildBundle, coldStart } from './bundles.ts';
import { lambdaEnvironment } from './cold-start.ts';
import { median } from './stats.ts';

const execFileAsync = promisify(execFile);

/** Wall time of a bare `node` started and ended, in ms. */
const bareNodeMs = async () => {
  const started = performance.now();
  await execFileAsync(process.execPath, ['-e', '0'], { env: {} });
  return performance.now() - started;
};

/** Median INIT ms per function id (`samples` fresh processes each), and the bare Node start apart. */
export const measureInitMs = async (options: {
  repoRoot: string;
  outDir: string;
  resources: LocalResources;
  functionIds: readonly string[];
  samples?: number;
}): Promise<{ byFunction: Record<string, number>; importMs: Record<string, number>; nodeStartMs: number }> => {
  const samples = options.samples ?? 3;
  const all = [...routes, ...workers];
  rmSync(options.outDir, { recursive: true, force: true });
  try {
    const nodeStarts: number[] = [];
    for (let i = 0; i < samples; i++) nodeStarts.push(await bareNodeMs());
    const nodeStartMs = median(nodeStarts);
    const importMs: Record<string, number> = {};
    const byFunction: Record<string, number> = {};
    for (const id of options.functionIds) {
      const fn = all.find((f) => f.id === id);
      if (!fn) throw new Error(`no function ${id}`);
      const bundle = await buildBundle(options.repoRoot, options.outDir, { id: fn.id, entry: fn.entry });
      const environment = lambdaEnvironment(options.resources, fn.id, 'http://127.0.0.1:9');
      const times: number[] = [];
      for (let i = 0; i < samples; i++) times.push((await coldStart(bundle.file, environment)).importMs);
      importMs[id] = median(times);
      byFunction[id] = nodeStartMs + median(times);
    }
    return { byFunction, importMs, nodeStartMs };
  } finally {
    rmSync(options.outDir, { recursive: true, force: true });
  }
};
