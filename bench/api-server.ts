/**
 * The local API server alone in its own process, so its memory and CPU exclude the emulators and
 * the load generator. Started by `bench/server-process.ts` with an IPC channel:
 *   env BENCH_RESOURCES (LocalResources as JSON) → sends { type: 'ready', baseUrl, pid }
 *   receives { type: 'stats', gc? }              → sends { type: 'stats', ...ServerStats }
 * With `gc: true` and node's --expose-gc, a full garbage collection runs first (live heap only).
 * It exits when the parent disconnects (including when the parent dies).
 */
import { startLocalApi } from '../local/api-gateway.ts';
import { localDeps } from '../local/local-deps.ts';
import type { LocalResources } from '../local/provision.ts';

export interface ServerStats {
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  /** DynamoDB commands sent since start (counted once per `send`, retries not included). */
  ddbCalls: number;
  /** Wall time spent inside those sends, summed. */
  ddbMs: number;
  /** Requests answered since start, and the summed time from request to response finish. */
  requests: number;
  serverMs: number;
}

const resourcesJson = process.env.BENCH_RESOURCES;
if (!resourcesJson || !process.send) {
  console.error('bench/api-server.ts is started by bench/run.ts (needs BENCH_RESOURCES and an IPC channel)');
  process.exit(2);
}
const resources = JSON.parse(resourcesJson) as LocalResources;

const stats: ServerStats = {
  rss: 0,
  heapUsed: 0,
  heapTotal: 0,
  external: 0,
  ddbCalls: 0,
  ddbMs: 0,
  requests: 0,
  serverMs: 0,
};

const deps = localDeps(resources);
deps.ddb.middlewareStack.add(
  (next) => async (args) => {
    stats.ddbCalls++;
    const started = performance.now();
    try {
      return await next(args);
    } finally {
      stats.ddbMs += performance.now() - started;
    }
  },
  { step: 'initialize', name: 'benchCallCounter', priority: 'high' },
);

const api = await startLocalApi({ deps, port: 0, host: '127.0.0.1' });
api.server.prependListener('request', (_request, response) => {
  const started = performance.now();
  response.once('finish', () => {
    stats.requests++;
    stats.serverMs += performance.now() - started;
  });
});

process.on('message', (message: { type?: string; gc?: boolean }) => {
  if (message.type !== 'stats') return;
  if (message.gc) globalThis.gc?.();
  const { rss, heapUsed, heapTotal, external } = process.memoryUsage();
  process.send?.({ type: 'stats', ...stats, rss, heapUsed, heapTotal, external });
});
process.on('disconnect', () => {
  void api.close().finally(() => {
    deps.ddb.destroy();
    deps.sqs.destroy();
    deps.s3.destroy();
    process.exit(0);
  });
});

process.send({ type: 'ready', baseUrl: api.baseUrl, pid: process.pid });
