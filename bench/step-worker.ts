/**
 * The step executor alone in its own process, as one Lambda execution environment runs it: the
 * steps queue polled with batches of 10 (local/event-source.ts), each invocation given a Lambda
 * context, the real node executors (sandbox provider). Started by bench/step-memory.ts:
 *   env BENCH_RESOURCES (LocalResources as JSON) → sends { type: 'ready' }
 *   receives { type: 'peak' } → sends { type: 'peak', maxRssBytes } (the process's peak resident memory)
 * It exits when the parent disconnects.
 */
import './env.ts';
import { makeHandler } from '../functions/workers/step-executor.ts';
import { startQueuePoller } from '../local/event-source.ts';
import { localDeps } from '../local/local-deps.ts';
import type { LocalResources } from '../local/provision.ts';
import { stepsQueue } from '../platform/definitions.ts';

const resourcesJson = process.env.BENCH_RESOURCES;
if (!resourcesJson || !process.send) {
  console.error('bench/step-worker.ts is started by bench/step-memory.ts (needs BENCH_RESOURCES and an IPC channel)');
  process.exit(2);
}
const resources = JSON.parse(resourcesJson) as LocalResources;
const poller = startQueuePoller({
  endpoint: resources.sqsS3Endpoint,
  queueUrl: resources.queueUrls.Steps,
  definition: stepsQueue,
  handler: makeHandler(localDeps(resources)) as never,
  waitSeconds: 1,
});
process.on('message', (message: { type?: string }) => {
  if (message.type === 'peak') process.send?.({ type: 'peak', maxRssBytes: process.resourceUsage().maxRSS * 1024 });
});
process.on('disconnect', () => {
  void poller.stop().finally(() => process.exit(0));
});
process.send({ type: 'ready' });
