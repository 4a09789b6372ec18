/**
 * Records the AWS commands one function's first request sends, for its cold-start floor
 * (bench/cold-start.ts, bench/bundles.ts `floorSource`). Run in a fresh `node` with the function's
 * Lambda environment, so its per-container caches are as cold as on a cold start:
 *
 *   node bench/first-request.ts <functionId> <resources.json> <event.json>
 *
 * It builds the function's handler from its source module over the local deps, whose clients carry
 * the AWS command log (`local/aws-command-log.ts`), invokes it once as that function
 * (`local/invocation.ts`) and prints, as its last line, the JSON of `{ commands, outcome }`: every
 * command the handler sent, in order, each time.
 */
import { readFileSync } from 'node:fs';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { operatorEventsDepsFromEnv } from '../functions/app/publish-operator-events.ts';
import type { Deps } from '../functions/deps.ts';
import { workers } from '../lib/workers.ts';
import { type AwsCommandShape, recordAwsCommands, withAwsCommandLog } from '../local/aws-command-log.ts';
import { invokedAs } from '../local/invocation.ts';
import { lambdaContext } from '../local/lambda-context.ts';
import { localDeps } from '../local/local-deps.ts';
import type { LocalResources } from '../local/provision.ts';
import { routes } from '../platform/routes.ts';

type Handler = (event: unknown, context: unknown) => Promise<unknown>;

const [functionId = '', resourcesFile = '', eventFile = ''] = process.argv.slice(2);
const fn = [...routes, ...workers].find((f) => f.id === functionId);
if (!fn) throw new Error(`no function ${functionId}`);
const resources = JSON.parse(readFileSync(resourcesFile, 'utf8')) as LocalResources;
const event = JSON.parse(readFileSync(eventFile, 'utf8')) as unknown;

const commands: AwsCommandShape[] = [];
// Registered before any client is built, so the deps' clients are instrumented.
recordAwsCommands((shape) => {
  if (shape.function === functionId) commands.push(shape);
});
const module = (await import(new URL(`../${fn.entry}`, import.meta.url).href)) as {
  makeHandler: (deps: unknown) => Handler;
};
// The publisher's deps are its bus sender over an EventBridge client (the environment's endpoint).
const deps: unknown =
  functionId === 'EventPublisher'
    ? operatorEventsDepsFromEnv()(withAwsCommandLog({ events: new EventBridgeClient({}) }).events)
    : (localDeps(resources) satisfies Deps);
/**
 * A streaming route's handler takes the event and a way to open its response, not a context: its
 * answer is taken whole here (this process has no streaming runtime), its status kept.
 */
const asBuffered =
  (stream: (event: unknown, open: (head: { statusCode: number }) => unknown) => Promise<void>): Handler =>
  async (event) => {
    let statusCode: number | undefined;
    await stream(event, (head) => {
      statusCode = head.statusCode;
      return { write: () => {}, end: () => {}, closed: false };
    });
    return { statusCode };
  };
const built = module.makeHandler(deps);
const isStream = 'transport' in fn && fn.transport === 'stream';
const handler = invokedAs(functionId, isStream ? asBuffered(built as never) : built);
let outcome: { statusCode?: number; failures?: number; error?: string } = {};
try {
  const result = (await handler(event, lambdaContext(functionId, 10_000))) as
    | { statusCode?: number; batchItemFailures?: unknown[] }
    | undefined;
  outcome = { statusCode: result?.statusCode, failures: result?.batchItemFailures?.length };
} catch (error) {
  outcome = { error: String((error as Error)?.stack ?? error) };
}
process.stdout.write(`\n${JSON.stringify({ commands, outcome })}\n`);
process.exit(0);
