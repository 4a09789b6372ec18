/**
 * The service as `cdk deploy` would run it, on one machine: every function the templates trigger
 * runs its bundle from the cloud assembly in its own Node process (`function-process.ts`), with
 * the template's handler, timeout, memory and environment (references resolved to the emulators'
 * table, queues and bucket); the HTTP API's routes, the SQS and DynamoDB stream event source
 * mappings and the schedule rules are served as the template declares them. Only the SDK's
 * standard variables point the functions' clients at the emulators; any other AWS service is an
 * unreachable address, so nothing can reach AWS.
 */

import { randomUUID } from 'node:crypto';
import { workers } from '../../lib/workers.ts';
import { envNames } from '../../platform/definitions.ts';
import { basePath } from '../../platform/routes.ts';
import { localAwsConfig } from '../emulators.ts';
import { startFilesEdge } from '../files-edge.ts';
import { type InvokedHandler, startLambdaEmulator } from '../lambda-emulator.ts';
import type { LocalResources } from '../provision.ts';
import { type StreamPoller, startStreamPoller } from '../stream-source.ts';
import { type Assembly, type FunctionSpec, templateResolver, triggeredFunctions } from './assembly.ts';
import { FunctionProcess, type InvokeOutcome } from './function-process.ts';
import { type HttpFront, startHttpFront } from './http-front.ts';
import { type QueueMapping, startQueueMapping } from './queue-mapping.ts';

/** The AWS SDK's standard configuration, pointed at the emulators (the deployed code builds `new XClient({})`). */
export const emulatorSdkEnvironment = (resources: LocalResources): Record<string, string> => ({
  AWS_REGION: localAwsConfig.region,
  AWS_DEFAULT_REGION: localAwsConfig.region,
  AWS_ACCESS_KEY_ID: localAwsConfig.credentials.accessKeyId,
  AWS_SECRET_ACCESS_KEY: localAwsConfig.credentials.secretAccessKey,
  AWS_ENDPOINT_URL_DYNAMODB: resources.dynamoDbEndpoint,
  AWS_ENDPOINT_URL_SQS: resources.sqsS3Endpoint,
  // An IP-address endpoint: the S3 client addresses buckets by path, as fauxqs needs; the presign
  // guard in front of it checks the presigned requests fauxqs would take unchecked.
  AWS_ENDPOINT_URL_S3: resources.s3Endpoint,
  // Every other service (Secrets Manager, X-Ray…): a closed port on loopback, never AWS.
  AWS_ENDPOINT_URL: 'http://127.0.0.1:9',
  AWS_EC2_METADATA_DISABLED: 'true',
});

/**
 * The local-only settings a function may read (docs/operations.md), taken from `env` when set:
 * they go to every function beside the template's environment, never into the template. Metrics'
 * embedded-format lines stay off unless asked for, as with `npm start`.
 */
export const localSwitches = (env: NodeJS.ProcessEnv): Record<string, string> => {
  const names = [
    'ALLOW_PRIVATE_CALLBACKS',
    'WEBHOOK_CA_FILE',
    'LOCAL_STACK',
    'SANDBOX_LATENCY_MS',
    'POWERTOOLS_LOG_LEVEL',
  ];
  return {
    POWERTOOLS_METRICS_DISABLED: env.POWERTOOLS_METRICS_DISABLED ?? 'true',
    ...Object.fromEntries(names.flatMap((name) => (env[name] ? [[name, env[name]]] : []))),
  };
};

/** The functions' Node must be the runtime's: `nodejs24.x` runs on Node 24. */
const checkRuntime = (fn: FunctionSpec) => {
  const wanted = /^nodejs(\d+)\.x$/.exec(fn.runtime)?.[1];
  const have = process.versions.node.split('.')[0];
  if (!wanted) throw new Error(`${fn.id}: runtime ${fn.runtime} is not a Node.js runtime`);
  if (wanted !== have) {
    throw new Error(`${fn.id} runs on ${fn.runtime}, this is Node ${process.version}: run through npm (Node 24)`);
  }
};

export interface BundleStackOptions {
  assembly: Assembly;
  resources: LocalResources;
  /** Added to every function's environment: the rehearsal's local switches, never the template's. */
  localEnvironment?: Record<string, string>;
  /** The EventBridge emulator the operator events go to; without, PutEvents meets a closed port (and is retried). */
  eventBridgeEndpoint?: string;
  port?: number;
  host?: string;
  /** Ticks each schedule rule every this many ms; off (undefined) when the caller ticks by hand. */
  scheduleIntervalMs?: number;
  /** Each line a function writes. */
  onLog?: (functionId: string, line: string) => void;
  onError?: (error: unknown) => void;
}

export interface BundleStack {
  baseUrl: string;
  /** Every started function, by construct id (`GetRun`, `StepExecutor`…). */
  functions: ReadonlyMap<string, FunctionProcess>;
  /** The event source mappings, by the construct id of the function they invoke. */
  mappings: ReadonlyMap<string, QueueMapping>;
  /** The last lines each function wrote, by construct id. */
  logs: ReadonlyMap<string, string[]>;
  /** Invokes each schedule rule's target once, with the event EventBridge sends. */
  tick(): Promise<InvokeOutcome[]>;
  close(): Promise<void>;
}

const keptLogLines = 300;

export const startBundleStack = async (options: BundleStackOptions): Promise<BundleStack> => {
  const { assembly, resources } = options;
  const resolver = templateResolver(assembly, resources);
  const specs = triggeredFunctions(assembly);
  const byLogicalId = new Map<string, FunctionProcess>();
  const functions = new Map<string, FunctionProcess>();
  const logs = new Map<string, string[]>();
  // Lambda's Invoke API for the functions one invokes (their name is their logical id, as `Ref` resolves).
  const invocable: Record<string, InvokedHandler> = {};
  const lambda = await startLambdaEmulator(invocable);
  // The stack's files distribution (nosniff over the bucket's answers), in front of the local S3:
  // file links name it in place of the template's CloudFront host.
  const filesEdge = await startFilesEdge({ upstream: resources.s3Endpoint });
  for (const spec of specs) {
    const templateEnvironment = resolver.environmentOf(spec);
    checkRuntime(spec);
    const lines: string[] = [];
    logs.set(spec.id, lines);
    const fn = new FunctionProcess({
      name: spec.id,
      codeDir: spec.codeDir,
      handler: spec.handler,
      timeoutSeconds: spec.timeoutSeconds,
      memoryMb: spec.memoryMb,
      environment: {
        ...templateEnvironment,
        ...(envNames.filesBaseUrl in templateEnvironment ? { [envNames.filesBaseUrl]: filesEdge.url } : {}),
        ...emulatorSdkEnvironment(resources),
        ...(options.eventBridgeEndpoint ? { AWS_ENDPOINT_URL_EVENTBRIDGE: options.eventBridgeEndpoint } : {}),
        AWS_ENDPOINT_URL_LAMBDA: lambda.endpoint,
        ...options.localEnvironment,
      },
      onLog: (line) => {
        lines.push(line);
        if (lines.length > keptLogLines) lines.shift();
        options.onLog?.(spec.id, line);
      },
    });
    byLogicalId.set(spec.logicalId, fn);
    functions.set(spec.id, fn);
    invocable[spec.logicalId] = async (event) => {
      const outcome = await fn.invoke(event);
      if (!outcome.ok) throw Object.assign(new Error(outcome.error.errorMessage), { name: outcome.error.errorType });
      return outcome.result;
    };
  }
  const functionOf = (logicalId: string) => {
    const fn = byLogicalId.get(logicalId);
    if (!fn) throw new Error(`No function ${logicalId} in the assembly`);
    return fn;
  };

  const stops: (() => Promise<void> | void)[] = [
    () => lambda.stop(),
    () => filesEdge.stop(),
    ...[...functions.values()].map((fn) => () => fn.stop()),
  ];
  const close = async () => {
    for (const stop of stops.reverse()) {
      try {
        await stop();
      } catch (error) {
        options.onError?.(error);
      }
    }
  };

  try {
    // Cold-start every bundle now: one that does not import fails here, named.
    const started = await Promise.allSettled([...functions.values()].map((fn) => fn.start()));
    const failed = started.flatMap((s) => (s.status === 'rejected' ? [(s.reason as Error).message] : []));
    if (failed.length > 0) throw new Error(`bundles that do not start:\n  ${failed.join('\n  ')}`);

    const front: HttpFront = await startHttpFront({
      routes: assembly.routes,
      functionOf,
      basePath,
      port: options.port ?? 0,
      host: options.host ?? '127.0.0.1',
    });
    stops.push(() => front.close());

    const mappings = new Map<string, QueueMapping>();
    for (const mapping of assembly.queueMappings) {
      const stack = specs.find((s) => s.logicalId === mapping.functionLogicalId)?.stack ?? '';
      const queueMapping = startQueueMapping({
        mapping,
        fn: functionOf(mapping.functionLogicalId),
        sqsEndpoint: resources.sqsS3Endpoint,
        queueUrl: resolver.queueUrlOf(mapping, stack),
        queueArn: resolver.queueArnOf(mapping, stack),
        onError: options.onError,
      });
      stops.push(() => queueMapping.stop());
      mappings.set(functionOf(mapping.functionLogicalId).options.name, queueMapping);
    }

    const streamMappingOf = (functionLogicalId: string) => {
      const worker = workers.find((w) => w.trigger.kind === 'stream' && functionLogicalId.startsWith(w.id));
      return worker?.trigger.kind === 'stream' ? worker.trigger.mapping : undefined;
    };
    // The table's stream mappings: the template's filters, batch size and retries, read locally.
    for (const mapping of assembly.streamMappings.filter((m) => m.enabled)) {
      const fn = functionOf(mapping.functionLogicalId);
      const poller: StreamPoller = startStreamPoller({
        dynamoDbEndpoint: resources.dynamoDbEndpoint,
        tableName: resources.tableName,
        // Whose mapping it is: the stream worker whose id names the function (lib/api-stack.ts).
        mapping: { ...mapping, id: streamMappingOf(mapping.functionLogicalId) },
        intervalMs: 200,
        handler: async (event) => {
          const outcome = await fn.invoke(event);
          if (!outcome.ok) throw new Error(outcome.error.errorMessage);
          return outcome.result as { batchItemFailures: { itemIdentifier: string }[] };
        },
        onFailure: (failure) =>
          options.onError?.(new Error(`stream batch failed every retry: ${JSON.stringify(failure)}`)),
        onError: options.onError,
      });
      stops.push(() => poller.stop());
    }

    const tick = () =>
      Promise.all(
        assembly.schedules.map((schedule) => {
          const stack = specs.find((s) => s.logicalId === schedule.functionLogicalId)?.stack ?? '';
          const event = schedule.input
            ? JSON.parse(schedule.input)
            : {
                version: '0',
                id: randomUUID(),
                'detail-type': 'Scheduled Event',
                source: 'aws.events',
                account: '000000000000',
                time: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
                region: localAwsConfig.region,
                resources: [`arn:aws:events:${localAwsConfig.region}:000000000000:rule/${stack}-${schedule.logicalId}`],
                detail: {},
              };
          // EventBridge invokes asynchronously and the rule retries nothing: a failed tick is reported, not retried.
          return functionOf(schedule.functionLogicalId).invoke(event);
        }),
      );

    if (options.scheduleIntervalMs !== undefined) {
      let busy = false;
      const timer = setInterval(async () => {
        if (busy) return;
        busy = true;
        try {
          for (const outcome of await tick()) if (!outcome.ok) options.onError?.(new Error(outcome.error.errorMessage));
        } finally {
          busy = false;
        }
      }, options.scheduleIntervalMs);
      timer.unref();
      stops.push(() => clearInterval(timer));
    }

    return { baseUrl: front.baseUrl, functions, mappings, logs, tick, close };
  } catch (error) {
    await close();
    throw error;
  }
};
