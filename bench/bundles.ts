import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
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
import { envNames } from '../platform/definitions.ts';

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

/** An SDK package a function's code uses by name: a client, lib-dynamodb, the presigner. */
const sdkPackagePattern = /^@aws-sdk\/(client-[\w-]+|lib-[\w-]+|s3-request-presigner)$/;

/**
 * The SDK packages a bundle holds (bundled: whose files are among its inputs) or imports at run
 * time (runtime: its external imports), from esbuild's metafile.
 */
export const sdkPackagesOf = (output: Metafile['outputs'][string]): string[] => {
  const found = new Set<string>();
  for (const path of Object.keys(output.inputs)) {
    const name = /node_modules\/(@aws-sdk\/[^/]+)\//.exec(path)?.[1];
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

/** The AWS clients the bench has emulators for: the floor's first call makes one trivial call on each it is asked for. */
export type FloorCall = 'dynamodb' | 'sqs' | 's3' | 'events';

/** What a floor bundle's source says for each SDK package: its import, the client it builds, the call it makes. */
const floorParts: Record<string, { imports: string; build: string; call?: [FloorCall, string] }> = {
  '@aws-sdk/client-dynamodb': {
    imports: "import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';",
    build: 'const dynamodb = new DynamoDBClient({});',
    call: [
      'dynamodb',
      `await dynamodb.send(new GetItemCommand({ TableName: process.env.${envNames.table}, Key: { PK: { S: 'BENCH#FLOOR' }, SK: { S: 'BENCH#FLOOR' } } }));`,
    ],
  },
  '@aws-sdk/lib-dynamodb': {
    imports: "import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';",
    build:
      'const documents = DynamoDBDocumentClient.from(dynamodb, { marshallOptions: { removeUndefinedValues: true } });',
    call: [
      'dynamodb',
      `await documents.send(new GetCommand({ TableName: process.env.${envNames.table}, Key: { PK: 'BENCH#FLOOR', SK: 'BENCH#FLOOR' } }));`,
    ],
  },
  '@aws-sdk/client-sqs': {
    imports: "import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';",
    build: 'const sqs = new SQSClient({});',
    call: [
      'sqs',
      `await sqs.send(new GetQueueAttributesCommand({ QueueUrl: process.env.${envNames.stepsQueueUrl}, AttributeNames: ['ApproximateNumberOfMessages'] }));`,
    ],
  },
  '@aws-sdk/client-s3': {
    imports: "import { HeadBucketCommand, S3Client } from '@aws-sdk/client-s3';",
    build: 'const s3 = new S3Client({});',
    call: ['s3', `await s3.send(new HeadBucketCommand({ Bucket: process.env.${envNames.bucket} }));`],
  },
  '@aws-sdk/client-eventbridge': {
    imports: "import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';",
    build: 'const events = new EventBridgeClient({});',
    call: [
      'events',
      `await events.send(new PutEventsCommand({ Entries: [{ EventBusName: process.env.${envNames.operatorEventBus}, Source: 'bench', DetailType: 'Floor', Detail: '{}' }] }));`,
    ],
  },
  '@aws-sdk/s3-request-presigner': {
    imports: "import { getSignedUrl } from '@aws-sdk/s3-request-presigner';",
    build: 'export const presign = getSignedUrl;',
  },
  '@aws-sdk/client-secrets-manager': {
    imports: "import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';",
    build: 'export const secretsManager = new SecretsManagerClient({});',
  },
  '@aws-sdk/client-ssm': {
    imports: "import { SSMClient } from '@aws-sdk/client-ssm';",
    build: 'export const ssm = new SSMClient({});',
  },
  // The step executor's client of Bedrock models: built at import, called only by a model step.
  '@aws-sdk/client-bedrock-runtime': {
    imports: "import { BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime';",
    build: 'export const bedrock = new BedrockRuntimeClient({});',
  },
};

/**
 * The source of a floor bundle: it imports the same SDK packages as a function and builds their
 * clients at import, as the function's deps do, and nothing else. Its handler makes one trivial
 * call on each client the event names (`{ calls: ['dynamodb', 'sqs'] }`), the document client's
 * GetItem when lib-dynamodb is in the set.
 */
export const floorSource = (sdkPackages: readonly string[]): string => {
  const parts = sdkPackages.map((name) => {
    const part = floorParts[name];
    if (!part) throw new Error(`no floor for ${name}: add it to floorParts (bench/bundles.ts)`);
    return part;
  });
  // lib-dynamodb needs the client it wraps; the document client's call replaces the raw one.
  if (sdkPackages.includes('@aws-sdk/lib-dynamodb') && !sdkPackages.includes('@aws-sdk/client-dynamodb')) {
    throw new Error('lib-dynamodb without client-dynamodb');
  }
  const calls = new Map<FloorCall, string>();
  for (const part of parts) if (part.call) calls.set(part.call[0], part.call[1]);
  return [
    ...parts.map((p) => p.imports),
    ...parts.map((p) => p.build),
    'export const handler = async (event) => {',
    ...[...calls].map(([name, call]) => `  if (event.calls?.includes('${name}')) ${call}`),
    '  return { statusCode: 200 };',
    '};',
    '',
  ].join('\n');
};

/** The floor of an SDK package set, as the same esbuild settings build it with the same SDK source. */
export const buildFloorBundle = async (
  repoRoot: string,
  outDir: string,
  sdkPackages: readonly string[],
  sdk: SdkSource,
): Promise<BuiltBundle> => {
  const id = `floor-${sdkPackages.length === 0 ? 'none' : createHash('sha256').update(sdkPackages.join(',')).digest('hex').slice(0, 8)}`;
  const sourceDir = join(outDir, 'floor-sources', id);
  mkdirSync(sourceDir, { recursive: true });
  const entry = join(sourceDir, 'floor.mjs');
  writeFileSync(entry, floorSource(sdkPackages));
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
