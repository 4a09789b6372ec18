/**
 * The local API server alone in its own process, so its memory and CPU exclude the emulators and
 * the load generator. Started by `bench/server-process.ts` with an IPC channel:
 *   env BENCH_RESOURCES (LocalResources as JSON) → sends { type: 'ready', baseUrl, pid }
 *   receives { type: 'stats', gc? }              → sends { type: 'stats', ...ServerStats }
 * DynamoDB and SQS calls are counted by an SDK middleware on the server's clients (bench/counters.ts).
 * With `gc: true` and node's --expose-gc, a full garbage collection runs first (live heap only).
 * It exits when the parent disconnects (including when the parent dies).
 */
import { startLocalApi } from '../local/api-gateway.ts';
import { localDeps } from '../local/local-deps.ts';
import type { LocalResources } from '../local/provision.ts';
import { countDynamoDbCalls, countSqsCalls } from './counters.ts';
import { limitItemWrites } from './item-write-limit.ts';

export interface ServerStats {
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  /** DynamoDB commands sent since start (counted once per `send`, retries not included). */
  ddbCalls: number;
  /** Wall time spent inside those sends, summed. */
  ddbMs: number;
  /** The same calls by low-level command name (`TransactWriteItemsCommand`…). */
  ddbByCommand: Record<string, number>;
  /** SQS commands sent since start, in all and by command name. */
  sqsCalls: number;
  sqsByCommand: Record<string, number>;
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

const deps = localDeps(resources);
const ddb = countDynamoDbCalls(deps.ddb);
// The hot-key section: DynamoDB's per-item write limit, which DynamoDB Local does not have.
const itemWritesPerSecond = Number(process.env.BENCH_ITEM_WRITES_PER_SECOND);
if (itemWritesPerSecond > 0) limitItemWrites(deps.ddb, itemWritesPerSecond);
const sqs = countSqsCalls(deps.sqs);
const served = { requests: 0, serverMs: 0 };

const api = await startLocalApi({ deps, port: 0, host: '127.0.0.1' });
api.server.prependListener('request', (_request, response) => {
  const started = performance.now();
  response.once('finish', () => {
    served.requests++;
    served.serverMs += performance.now() - started;
  });
});

process.on('message', (message: { type?: string; gc?: boolean }) => {
  if (message.type !== 'stats') return;
  if (message.gc) globalThis.gc?.();
  const { rss, heapUsed, heapTotal, external } = process.memoryUsage();
  const stats: ServerStats = {
    rss,
    heapUsed,
    heapTotal,
    external,
    ddbCalls: ddb.total,
    ddbMs: ddb.ms,
    ddbByCommand: ddb.byCommand,
    sqsCalls: sqs.total,
    sqsByCommand: sqs.byCommand,
    ...served,
  };
  process.send?.({ type: 'stats', ...stats });
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
