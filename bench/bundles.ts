import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { build, type Metafile } from 'esbuild';
import {
  besideFileCopies,
  bundleFileName,
  bundlingOptions,
  credentialProvidersLambdaNeverReaches,
} from '../lib/bundling.ts';
import type { AwsCommandShape } from '../local/aws-command-log.ts';
import { dataTable, envNames, type IndexDefinition } from '../platform/definitions.ts';

const execFileAsync = promisify(execFile);

/**
 * Where the AWS SDK v3 comes from: `bundled` into each function (tree-shaken and minified with the
 * rest), or left as imports of the `runtime`'s copy (nodejs24.x ships one; here the repository's
 * node_modules stands in for it, which is why bundles are written inside the repository).
 */
export type SdkSource = 'bundled' | 'runtime';

/** Every SDK package left to the runtime's copy. */
const wholeSdk = '@aws-sdk/*';

/** The SDK source `lib/bundling.ts` deploys. */
export const deployedSdkSource: SdkSource = bundlingOptions.externalModules.includes(wholeSdk) ? 'runtime' : 'bundled';

export const otherSdkSource = (source: SdkSource): SdkSource => (source === 'bundled' ? 'runtime' : 'bundled');

/**
 * The `external` list of a build: the deployed one, or its counterpart with the other SDK source
 * (bundled: only the credential providers Lambda never reaches are left out; runtime: the whole SDK).
 */
const externalsFor = (source: SdkSource): string[] => {
  const others = bundlingOptions.externalModules.filter(
    (m) => m !== wholeSdk && !(credentialProvidersLambdaNeverReaches as readonly string[]).includes(m),
  );
  return source === 'runtime'
    ? [...others, wholeSdk, ...credentialProvidersLambdaNeverReaches]
    : [...others, ...credentialProvidersLambdaNeverReaches];
};

export interface BuiltBundle {
  id: string;
  entry: string;
  sdk: SdkSource;
  file: string;
  /** Size of the minified bundle alone, without its source map or the files beside it. */
  bytes: number;
  mapBytes: number;
  /** Bytes of the data files copied beside it (`lib/bundling.ts`), read at run time. */
  besideBytes: number;
  /** Largest inputs (by bytes in the output), to see what a heavy bundle carries. */
  largestInputs: { path: string; bytes: number }[];
  /** The AWS SDK packages it carries or imports (clients, lib-dynamodb, the presigner), sorted. */
  sdkPackages: string[];
  /** Whether any Powertools code is in it. */
  powertools: boolean;
}

/**
 * An SDK package a function's code uses by name: an AWS client, lib-dynamodb, the presigner; and the
 * MCP SDK, the protocol library the MCP route answers with (its floor loads it as the route must).
 */
const sdkPackagePattern = /^(@aws-sdk\/(client-[\w-]+|lib-[\w-]+|s3-request-presigner)|@modelcontextprotocol\/sdk)$/;

/**
 * The SDK packages a bundle holds (bundled: whose files are among its inputs) or imports at run
 * time (runtime: its external imports), from esbuild's metafile.
 */
export const sdkPackagesOf = (output: Metafile['outputs'][string]): string[] => {
  const found = new Set<string>();
  for (const path of Object.keys(output.inputs)) {
    const name = /node_modules\/(@aws-sdk\/[^/]+|@modelcontextprotocol\/sdk)\//.exec(path)?.[1];
    if (name && sdkPackagePattern.test(name)) found.add(name);
  }
  // A client imported only on a rare path (`import()`, e.g. the step executor's Lambda client) is
  // not part of a cold start: its floor does not import it either.
  for (const imported of output.imports) {
    if (imported.external && imported.kind !== 'dynamic-import' && sdkPackagePattern.test(imported.path))
      found.add(imported.path);
  }
  return [...found].sort();
};

const outputOf = (metafile: Metafile) => {
  const name = Object.keys(metafile.outputs).find((o) => o.endsWith('.mjs'));
  const output = name ? metafile.outputs[name] : undefined;
  if (!output) throw new Error('esbuild wrote no .mjs');
  return output;
};

/**
 * Builds one entry the way `NodejsFunction` does with `bundlingOptions` (it runs the esbuild CLI
 * with `--bundle --target --platform=node --format --outfile=index.mjs --minify --sourcemap
 * --external:… --banner:js --main-fields`; the mapping below is the same, flag for flag), except
 * that `sdk` may ask for the other SDK source, and copies the files that ship beside it.
 */
export const buildBundle = async (
  repoRoot: string,
  outDir: string,
  fn: { id: string; entry: string },
  sdk: SdkSource = deployedSdkSource,
): Promise<BuiltBundle> => {
  const dir = join(outDir, sdk, fn.id);
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
    sourcesContent: bundlingOptions.sourcesContent,
    target: bundlingOptions.target,
    platform: bundlingOptions.platform,
    mainFields: [...bundlingOptions.mainFields],
    banner: { js: bundlingOptions.banner },
    external: externalsFor(sdk),
    metafile: true,
    logLevel: 'warning',
  });
  let besideBytes = 0;
  for (const copy of besideFileCopies(fn.entry)) {
    const to = join(dir, copy.to);
    mkdirSync(dirname(to), { recursive: true });
    cpSync(join(repoRoot, copy.from), to);
    besideBytes += statSync(to).size;
  }
  const output = outputOf(result.metafile);
  const largestInputs = Object.entries(output.inputs)
    .map(([path, input]) => ({ path, bytes: input.bytesInOutput }))
    .sort((a, b) => b.bytes - a.bytes)
    .slice(0, 3);
  return {
    ...fn,
    sdk,
    file,
    bytes: statSync(file).size,
    mapBytes: bundlingOptions.sourceMap ? statSync(`${file}.map`).size : 0,
    besideBytes,
    largestInputs,
    sdkPackages: sdkPackagesOf(output),
    powertools: Object.keys(output.inputs).some((path) => path.includes('node_modules/@aws-lambda-powertools/')),
  };
};

/** What a floor bundle's source says for each SDK package: its import and the client it builds at import. */
const floorParts: Record<string, { imports: string; build: string }> = {
  '@aws-sdk/client-dynamodb': {
    imports: "import { DynamoDBClient } from '@aws-sdk/client-dynamodb';",
    build: 'const dynamodb = new DynamoDBClient({});',
  },
  '@aws-sdk/lib-dynamodb': {
    imports: "import * as documentCommands from '@aws-sdk/lib-dynamodb';",
    build:
      'const documents = documentCommands.DynamoDBDocumentClient.from(dynamodb, { marshallOptions: { removeUndefinedValues: true } });',
  },
  '@aws-sdk/client-sqs': {
    imports: "import * as sqsCommands from '@aws-sdk/client-sqs';",
    build: 'const sqs = new sqsCommands.SQSClient({});',
  },
  '@aws-sdk/client-s3': {
    imports: "import * as s3Commands from '@aws-sdk/client-s3';",
    build: 'const s3 = new s3Commands.S3Client({});',
  },
  '@aws-sdk/client-eventbridge': {
    imports: "import * as eventCommands from '@aws-sdk/client-eventbridge';",
    build: 'const events = new eventCommands.EventBridgeClient({});',
  },
  '@aws-sdk/s3-request-presigner': {
    imports: "import { getSignedUrl } from '@aws-sdk/s3-request-presigner';",
    // Exported, so a floor that does not presign still carries it, as its function does.
    build: 'export const presign = getSignedUrl;',
  },
  '@aws-sdk/client-secrets-manager': {
    imports: "import * as secretCommands from '@aws-sdk/client-secrets-manager';",
    build: 'const secretsManager = new secretCommands.SecretsManagerClient({});',
  },
  '@aws-sdk/client-ssm': {
    imports: "import * as ssmCommands from '@aws-sdk/client-ssm';",
    build: 'const ssm = new ssmCommands.SSMClient({});',
  },
  // The MCP route's protocol library: the server and transport modules it imports (their zod and ajv).
  '@modelcontextprotocol/sdk': {
    imports: [
      "import { Server } from '@modelcontextprotocol/sdk/server/index.js';",
      "import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';",
      "import * as mcpTypes from '@modelcontextprotocol/sdk/types.js';",
    ].join('\n'),
    build: 'export const mcp = { Server, WebStandardStreamableHTTPServerTransport, mcpTypes };',
  },
  // The step executor's client of Bedrock models: built at import, called only by a model step.
  '@aws-sdk/client-bedrock-runtime': {
    imports: "import { BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime';",
    build: 'export const bedrock = new BedrockRuntimeClient({});',
  },
};

/** Where the floor's bare commands act: items under this partition, objects under this prefix. */
export const floorPartition = 'BENCH#FLOOR';
export const floorObjectKey = 'bench-floor/object';
/** The environment variable naming the queue the floor's messages go to (a queue of its own). */
export const floorQueueVariable = 'BENCH_FLOOR_QUEUE_URL';

const table = `process.env.${envNames.table}`;
const key = (sk: string) => `{ PK: '${floorPartition}', SK: ${sk} }`;
/** A sort key unique to the command and the item, so a transaction never names one item twice. */
const sk = (n: number, i = 0) => `'F${n}#${i}#' + run`;
const range = (count: number | undefined) => [...Array(Math.max(1, count ?? 1)).keys()];

/**
 * The bare form of one recorded command: the same service and operation, on the floor's own items,
 * queue, objects and bus, as many items as the recorded one named. `n` numbers the command.
 */
const bareCommand = (shape: AwsCommandShape, n: number, indexes: readonly IndexDefinition[]): string => {
  const { service, command } = shape;
  const op = command.replace(/Command$/, '');
  if (service === 'DynamoDB') {
    const send = (name: string, input: string) => `await documents.send(new documentCommands.${name}(${input}));`;
    switch (op) {
      case 'GetItem':
      case 'Get':
        return send('GetCommand', `{ TableName: ${table}, Key: ${key(sk(n))}, ConsistentRead: true }`);
      case 'PutItem':
      case 'Put':
        return send('PutCommand', `{ TableName: ${table}, Item: { ...${key(sk(n))}, at: Date.now() } }`);
      case 'UpdateItem':
      case 'Update':
        return send(
          'UpdateCommand',
          `{ TableName: ${table}, Key: ${key(sk(n))}, UpdateExpression: 'ADD n :one', ExpressionAttributeValues: { ':one': 1 }, ReturnValues: 'ALL_NEW' }`,
        );
      case 'DeleteItem':
      case 'Delete':
        return send('DeleteCommand', `{ TableName: ${table}, Key: ${key(sk(n))} }`);
      case 'Query': {
        const index = indexes.find((i) => i.name === shape.index);
        if (shape.index && !index) throw new Error(`no index ${shape.index}`);
        const pk = index ? index.partitionKey.name : 'PK';
        return send(
          'QueryCommand',
          `{ TableName: ${table}, ${index ? `IndexName: '${index.name}', ` : 'ConsistentRead: true, '}KeyConditionExpression: '#pk = :pk', ExpressionAttributeNames: { '#pk': '${pk}' }, ExpressionAttributeValues: { ':pk': '${floorPartition}' }, Limit: 20 }`,
        );
      }
      case 'BatchGetItem':
      case 'BatchGet':
        return send(
          'BatchGetCommand',
          `{ RequestItems: { [${table}]: { Keys: [${range(shape.count)
            .map((i) => key(sk(n, i)))
            .join(', ')}] } } }`,
        );
      case 'BatchWriteItem':
      case 'BatchWrite':
        return send(
          'BatchWriteCommand',
          `{ RequestItems: { [${table}]: [${range(shape.count)
            .map((i) => `{ PutRequest: { Item: ${key(sk(n, i))} } }`)
            .join(', ')}] } }`,
        );
      case 'TransactWriteItems':
      case 'TransactWrite': {
        const items = (shape.items ?? []).map((kind, i) => {
          const target = `TableName: ${table}, Key: ${key(sk(n, i))}`;
          if (kind === 'Put') return `{ Put: { TableName: ${table}, Item: ${key(sk(n, i))} } }`;
          if (kind === 'Update')
            return `{ Update: { ${target}, UpdateExpression: 'ADD n :one', ExpressionAttributeValues: { ':one': 1 } } }`;
          if (kind === 'Delete') return `{ Delete: { ${target} } }`;
          if (kind === 'ConditionCheck')
            return `{ ConditionCheck: { ${target}, ConditionExpression: 'attribute_not_exists(PK)' } }`;
          throw new Error(`no bare transaction item ${kind}`);
        });
        return send('TransactWriteCommand', `{ TransactItems: [${items.join(', ')}] }`);
      }
      case 'TransactGetItems':
      case 'TransactGet':
        return send(
          'TransactGetCommand',
          `{ TransactItems: [${(shape.items ?? []).map((_, i) => `{ Get: { TableName: ${table}, Key: ${key(sk(n, i))} } }`).join(', ')}] }`,
        );
    }
  }
  const queue = `process.env.${floorQueueVariable}`;
  if (service === 'SQS') {
    if (op === 'SendMessage')
      return `await sqs.send(new sqsCommands.SendMessageCommand({ QueueUrl: ${queue}, MessageBody: '{}' }));`;
    if (op === 'SendMessageBatch')
      return `await sqs.send(new sqsCommands.SendMessageBatchCommand({ QueueUrl: ${queue}, Entries: [${range(
        shape.count,
      )
        .map((i) => `{ Id: '${i}', MessageBody: '{}' }`)
        .join(', ')}] }));`;
  }
  const bucket = `process.env.${envNames.bucket}`;
  if (service === 'S3') {
    const object = `{ Bucket: ${bucket}, Key: '${floorObjectKey}' }`;
    // A presign signs the command without sending it: so does its floor.
    if (shape.presigned && (op === 'GetObject' || op === 'PutObject'))
      return `await getSignedUrl(s3, new s3Commands.${op}Command(${object}), { expiresIn: 300 });`;
    if (op === 'PutObject')
      return `await s3.send(new s3Commands.PutObjectCommand({ ...${object}, Body: 'floor', ContentType: 'text/plain' }));`;
    if (op === 'GetObject')
      return `await (await s3.send(new s3Commands.GetObjectCommand(${object}))).Body.transformToByteArray();`;
    if (op === 'HeadObject') return `await s3.send(new s3Commands.HeadObjectCommand(${object}));`;
    if (op === 'CopyObject')
      return `await s3.send(new s3Commands.CopyObjectCommand({ Bucket: ${bucket}, Key: '${floorObjectKey}-copy', CopySource: ${bucket} + '/${floorObjectKey}' }));`;
    if (op === 'DeleteObject')
      return `await s3.send(new s3Commands.DeleteObjectCommand({ Bucket: ${bucket}, Key: '${floorObjectKey}-copy' }));`;
  }
  if (service === 'EventBridge' && op === 'PutEvents') {
    return `await events.send(new eventCommands.PutEventsCommand({ Entries: [${range(shape.count)
      .map(
        () =>
          `{ EventBusName: process.env.${envNames.operatorEventBus}, Source: 'bench', DetailType: 'Floor', Detail: '{}' }`,
      )
      .join(', ')}] }));`;
  }
  throw new Error(`no bare form of ${service} ${command}: add it to bareCommand (bench/bundles.ts)`);
};

/** The SDK package a recorded command's bare form needs. */
const packageOf: Record<string, string> = {
  DynamoDB: '@aws-sdk/lib-dynamodb',
  SQS: '@aws-sdk/client-sqs',
  S3: '@aws-sdk/client-s3',
  EventBridge: '@aws-sdk/client-eventbridge',
  SecretsManager: '@aws-sdk/client-secrets-manager',
  SSM: '@aws-sdk/client-ssm',
};

/**
 * The source of a function's floor bundle: it imports the same SDK packages as the function and
 * builds their clients at import, as the function's deps do, and nothing else; its handler sends
 * the commands the function's first request sent (`commands`, recorded by the AWS command log:
 * bench/first-request.ts), in the same order, bare: the same services and operations, as many
 * items as each named, on the floor's own items, queue, objects and bus.
 */
export const floorSource = (
  sdkPackages: readonly string[],
  commands: readonly AwsCommandShape[] = [],
  indexes: readonly IndexDefinition[] = dataTable.indexes,
): string => {
  const parts = sdkPackages.map((name) => {
    const part = floorParts[name];
    if (!part) throw new Error(`no floor for ${name}: add it to floorParts (bench/bundles.ts)`);
    return part;
  });
  if (sdkPackages.includes('@aws-sdk/lib-dynamodb') && !sdkPackages.includes('@aws-sdk/client-dynamodb')) {
    throw new Error('lib-dynamodb without client-dynamodb');
  }
  for (const command of commands) {
    const needed = command.presigned ? '@aws-sdk/s3-request-presigner' : packageOf[command.service];
    if (!needed || !sdkPackages.includes(needed)) {
      throw new Error(`${command.service} ${command.command} was sent, but the function's bundle has no ${needed}`);
    }
  }
  return [
    ...parts.map((p) => p.imports),
    ...parts.map((p) => p.build),
    'export const handler = async () => {',
    // Fresh items per process: nothing a sample writes is met by the next.
    "  const run = process.pid + '#' + Date.now();",
    ...commands.map((command, n) => `  ${bareCommand(command, n, indexes)}`),
    '  return { statusCode: 200 };',
    '};',
    '',
  ].join('\n');
};

/**
 * The floor of one function: a bundle built with the same esbuild settings and SDK source, of
 * `floorSource(sdkPackages, commands)`.
 */
export const buildFloorBundle = async (
  repoRoot: string,
  outDir: string,
  id: string,
  sdkPackages: readonly string[],
  commands: readonly AwsCommandShape[],
  sdk: SdkSource,
): Promise<BuiltBundle> => {
  const sourceDir = join(outDir, 'floor-sources', id);
  mkdirSync(sourceDir, { recursive: true });
  const entry = join(sourceDir, 'floor.mjs');
  writeFileSync(entry, floorSource(sdkPackages, commands));
  return buildBundle(repoRoot, outDir, { id, entry }, sdk);
};

/** The Lambda context a handler gets, enough for Powertools and the handlers. */
const contextSource =
  "{ callbackWaitsForEmptyEventLoop: true, functionName: process.env.AWS_LAMBDA_FUNCTION_NAME ?? 'bench', " +
  "functionVersion: '$LATEST', invokedFunctionArn: 'arn:aws:lambda:us-east-1:000000000000:function:bench', " +
  "memoryLimitInMB: '1024', awsRequestId: crypto.randomUUID(), logGroupName: '/aws/lambda/bench', " +
  "logStreamName: 'bench', getRemainingTimeInMillis: () => 10000 }";

/**
 * Runs in a fresh Node: times `await import(bundle)` with `performance.now()`, then, given an
 * event file, the handler's first invocation (the event is read before the clock starts), each in
 * wall time and in the process's CPU time, and prints one JSON line: `{ importMs, importCpuMs,
 * firstMs, firstCpuMs, outcome }` (outcome: the status code, the batch item failures, or the error).
 */
const coldStartTimer = `
import { readFileSync } from 'node:fs';
const [file, eventFile] = process.argv.slice(1);
const cpuMs = (since) => { const u = process.cpuUsage(since); return (u.user + u.system) / 1000; };
const started = performance.now();
const startedCpu = process.cpuUsage();
const m = await import(file);
const importMs = performance.now() - started;
const importCpuMs = cpuMs(startedCpu);
if (typeof m.handler !== 'function') throw new Error('no handler export');
let firstMs;
let firstCpuMs;
let outcome = {};
if (eventFile) {
  // The emulators speak plain http, so a bundled SDK would import node:http on its first call
  // (25-40 ms of cpu), which it never does against AWS's https endpoints: load it off the clock.
  await import('node:http');
  const event = JSON.parse(readFileSync(eventFile, 'utf8'));
  const context = ${contextSource};
  const invoked = performance.now();
  const invokedCpu = process.cpuUsage();
  try {
    const result = await m.handler(event, context);
    firstMs = performance.now() - invoked;
    firstCpuMs = cpuMs(invokedCpu);
    outcome = { statusCode: result?.statusCode, failures: result?.batchItemFailures?.length,
      body: typeof result?.body === 'string' && result.statusCode >= 300 ? result.body.slice(0, 300) : undefined };
  } catch (error) {
    outcome = { error: String(error?.stack ?? error) };
  }
}
process.stdout.write('\\n' + JSON.stringify({ importMs, importCpuMs, firstMs, firstCpuMs, outcome }) + '\\n');
process.exit(0);
`;

export interface ColdStart {
  importMs: number;
  /** CPU time (user + system, every thread of the process) the import took. */
  importCpuMs: number;
  /** The first invocation's time, when an event was given. */
  firstMs: number | undefined;
  firstCpuMs: number | undefined;
  outcome: { statusCode?: number; failures?: number; body?: string; error?: string };
}

/**
 * One cold start in a fresh `node` (the repository's Node 24): import the bundle, then invoke its
 * handler once with the event in `eventFile`, if any. `environment` is the whole environment of the
 * process (as Lambda gives a function only its own).
 */
export const coldStart = async (
  file: string,
  environment: Record<string, string>,
  eventFile?: string,
): Promise<ColdStart> => {
  const { stdout } = await execFileAsync(
    process.execPath,
    ['--input-type=module', '-e', coldStartTimer, pathToFileURL(file).href, ...(eventFile ? [eventFile] : [])],
    { env: environment, timeout: 60_000, cwd: dirname(file), maxBuffer: 64 * 1024 * 1024 },
  );
  const last = stdout.trimEnd().split('\n').pop() ?? '';
  return JSON.parse(last) as ColdStart;
};
