/**
 * Reads a synthesized cloud assembly (`cdk synth -o <dir>`) the way the deploy rehearsal needs it:
 * each function's bundle directory, handler, timeout, memory and environment; the HTTP API's
 * routes and their integrations; the SQS and DynamoDB stream event source mappings; the schedule rules. References in
 * the templates (`Ref`, `Fn::GetAtt`, `Fn::ImportValue`, `Fn::Join`, `Fn::Sub`) are resolved
 * against the local emulators' resources, and one that cannot be is an error, not a blank.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { dataTable, libraryBucket, queues } from '../../platform/definitions.ts';
import { basePath, streamRoutes } from '../../platform/routes.ts';
import { localAwsConfig } from '../emulators.ts';
import { operatorEventBusName } from '../eventbridge-emulator.ts';
import type { LocalResources } from '../provision.ts';

type Intrinsic = Record<string, unknown>;

interface TemplateResource {
  Type: string;
  Properties?: Record<string, unknown>;
  Metadata?: Record<string, unknown>;
}

interface Template {
  Resources: Record<string, TemplateResource>;
  Outputs?: Record<string, { Value: unknown; Export?: { Name: unknown } }>;
}

export interface FunctionSpec {
  stack: string;
  logicalId: string;
  /** The construct id of the function in its stack (`GetRun`, `StepExecutor`…). */
  id: string;
  /** The bundle's directory in the assembly. */
  codeDir: string;
  handler: string;
  runtime: string;
  timeoutSeconds: number;
  memoryMb: number;
  /** `Environment.Variables` as the template writes them (references unresolved). */
  environment: Record<string, unknown>;
}

export interface RouteSpec {
  /** e.g. `POST /api/v1/workflows/{id}/runs`. */
  routeKey: string;
  method: string;
  path: string;
  functionLogicalId: string;
  payloadFormatVersion: string;
}

/** A DynamoDB stream event source mapping (the operator events' publisher on the table's stream). */
export interface StreamMappingSpec {
  logicalId: string;
  functionLogicalId: string;
  batchSize: number;
  /** Its filter patterns (`FilterCriteria.Filters[].Pattern`), parsed. */
  filters: Record<string, unknown>[];
  retryAttempts: number;
  reportBatchItemFailures: boolean;
  enabled: boolean;
}

export interface QueueMappingSpec {
  logicalId: string;
  functionLogicalId: string;
  /** The queue's logical id (in the function's stack). */
  queueLogicalId: string;
  batchSize: number;
  maximumBatchingWindowSeconds: number;
  reportBatchItemFailures: boolean;
  maximumConcurrency: number | undefined;
  enabled: boolean;
}

export interface ScheduleSpec {
  logicalId: string;
  functionLogicalId: string;
  /** e.g. `rate(1 minute)`. */
  scheduleExpression: string;
  intervalSeconds: number;
  /** The target's `Input`, when the rule sends a constant event. */
  input: string | undefined;
  maximumRetryAttempts: number | undefined;
}

export interface Assembly {
  dir: string;
  templates: ReadonlyMap<string, Template>;
  functions: readonly FunctionSpec[];
  routes: readonly RouteSpec[];
  queueMappings: readonly QueueMappingSpec[];
  schedules: readonly ScheduleSpec[];
  streamMappings: readonly StreamMappingSpec[];
}

const readJson = <T>(path: string): T => JSON.parse(readFileSync(path, 'utf8')) as T;

const isIntrinsic = (value: unknown): value is Intrinsic =>
  typeof value === 'object' && value !== null && !Array.isArray(value) && Object.keys(value).length === 1;

/** The logical id a `Ref` or `Fn::GetAtt [id, 'Arn']` points at, or undefined for anything else. */
const targetOf = (value: unknown): string | undefined => {
  if (!isIntrinsic(value)) return undefined;
  if (typeof value.Ref === 'string') return value.Ref;
  const getAtt = value['Fn::GetAtt'];
  if (Array.isArray(getAtt) && typeof getAtt[0] === 'string') return getAtt[0];
  if (typeof getAtt === 'string') return getAtt.split('.')[0];
  return undefined;
};

/** Every logical id `value` references (`Ref`, `Fn::GetAtt`), however deep in `Fn::Join` and the like. */
const referencedIds = (value: unknown): string[] => {
  const direct = targetOf(value);
  if (direct !== undefined) return [direct];
  if (Array.isArray(value)) return value.flatMap(referencedIds);
  if (typeof value === 'object' && value !== null) return Object.values(value).flatMap(referencedIds);
  return [];
};

/**
 * The function a route's integration, an event source mapping or a rule invokes: named directly,
 * or through an alias or a version of it (lib/safe-deploys.ts), whose own `FunctionName` names the
 * function. An alias's name in a mapping is built from the alias's ARN (`<function>:live`).
 */
const invokedFunction = (resources: Record<string, TemplateResource>, value: unknown): string | undefined => {
  for (const id of referencedIds(value)) {
    const resource = resources[id];
    if (resource?.Type === 'AWS::Lambda::Function') return id;
    if (resource?.Type === 'AWS::Lambda::Alias' || resource?.Type === 'AWS::Lambda::Version') {
      return invokedFunction(resources, resource.Properties?.FunctionName);
    }
  }
  return undefined;
};

/** `rate(1 minute)`, `rate(5 minutes)`, `rate(1 hour)` in seconds. */
export const rateSeconds = (expression: string): number => {
  const match = /^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$/.exec(expression);
  if (!match) throw new Error(`Schedule ${expression} is not a rate() expression`);
  const unit = { minute: 60, hour: 3600, day: 86_400 }[match[2]?.replace(/s$/, '') as 'minute' | 'hour' | 'day'];
  return Number(match[1]) * unit;
};

/** Reads `manifest.json`, the stacks' templates and their asset manifests. */
export const readAssembly = (dir: string): Assembly => {
  const manifest = readJson<{ artifacts: Record<string, { type: string; properties?: Record<string, unknown> }> }>(
    join(dir, 'manifest.json'),
  );
  const templates = new Map<string, Template>();
  /** Asset object key (`<hash>.zip`) → its directory in the assembly. */
  const assetDirs = new Map<string, string>();
  for (const [name, artifact] of Object.entries(manifest.artifacts)) {
    if (artifact.type === 'aws:cloudformation:stack') {
      templates.set(name, readJson<Template>(join(dir, String(artifact.properties?.templateFile))));
    } else if (artifact.type === 'cdk:asset-manifest') {
      const assets = readJson<{
        files?: Record<string, { source: { path?: string }; destinations: Record<string, { objectKey: string }> }>;
      }>(join(dir, String(artifact.properties?.file)));
      for (const file of Object.values(assets.files ?? {})) {
        if (!file.source.path) continue;
        for (const destination of Object.values(file.destinations)) {
          assetDirs.set(destination.objectKey, join(dir, file.source.path));
        }
      }
    }
  }

  const functions: FunctionSpec[] = [];
  const routes: RouteSpec[] = [];
  const queueMappings: QueueMappingSpec[] = [];
  const schedules: ScheduleSpec[] = [];
  const streamMappings: StreamMappingSpec[] = [];
  for (const [stack, template] of templates) {
    const resources = Object.entries(template.Resources);
    const integrations = new Map(
      resources.filter(([, r]) => r.Type === 'AWS::ApiGatewayV2::Integration').map(([id, r]) => [id, r.Properties]),
    );
    for (const [logicalId, resource] of resources) {
      const p = resource.Properties ?? {};
      if (resource.Type === 'AWS::Lambda::Function') {
        const code = p.Code as { S3Key?: unknown; ZipFile?: unknown } | undefined;
        const key = typeof code?.S3Key === 'string' ? code.S3Key : undefined;
        const metadataPath = resource.Metadata?.['aws:asset:path'];
        const codeDir =
          (key && assetDirs.get(key)) ?? (typeof metadataPath === 'string' ? join(dir, metadataPath) : undefined);
        if (!codeDir) continue; // Inline code (ZipFile): not a bundle of ours.
        const cdkPath = String(resource.Metadata?.['aws:cdk:path'] ?? '');
        functions.push({
          stack,
          logicalId,
          id: cdkPath.split('/')[1] ?? logicalId,
          codeDir,
          handler: String(p.Handler),
          runtime: String(p.Runtime),
          // CloudFormation's defaults when the template leaves them out.
          timeoutSeconds: Number(p.Timeout ?? 3),
          memoryMb: Number(p.MemorySize ?? 128),
          environment: (p.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables ?? {},
        });
      } else if (resource.Type === 'AWS::ApiGatewayV2::Route') {
        const routeKey = String(p.RouteKey);
        const [method = '', path = ''] = routeKey.split(' ');
        const target = p.Target as { 'Fn::Join'?: [string, unknown[]] } | string;
        const parts = typeof target === 'string' ? [] : (target['Fn::Join']?.[1] ?? []);
        const integrationId = parts.map(targetOf).find((id) => id !== undefined);
        const integration = integrationId ? integrations.get(integrationId) : undefined;
        const functionLogicalId = invokedFunction(template.Resources, integration?.IntegrationUri);
        if (!integration || !functionLogicalId || integration.IntegrationType !== 'AWS_PROXY') {
          throw new Error(`${stack}: route ${routeKey} has no Lambda proxy integration`);
        }
        routes.push({
          routeKey,
          method,
          path,
          functionLogicalId,
          payloadFormatVersion: String(integration.PayloadFormatVersion ?? '1.0'),
        });
      } else if (resource.Type === 'AWS::Lambda::Url') {
        // A function URL has no path: the streaming route it answers (platform/routes.ts) names it,
        // by the function's id. Served as a route, its answer buffered (no streaming runtime here).
        const functionLogicalId = invokedFunction(template.Resources, p.TargetFunctionArn);
        // Every route's function is described by its route key (lib/run-stream.ts).
        const description = template.Resources[functionLogicalId ?? '']?.Properties?.Description;
        const route = streamRoutes.find((r) => `${r.method} ${basePath}${r.path}` === description);
        if (!functionLogicalId || !route)
          throw new Error(`${stack}: function URL ${logicalId} answers no streaming route`);
        // Every method reaches a function URL: the run token's CORS preflight (OPTIONS) included.
        for (const method of route.runToken ? [route.method, 'OPTIONS'] : [route.method]) {
          routes.push({
            routeKey: `${method} ${basePath}${route.path}`,
            method,
            path: `${basePath}${route.path}`,
            functionLogicalId,
            payloadFormatVersion: '2.0',
          });
        }
      } else if (resource.Type === 'AWS::Lambda::EventSourceMapping' && p.StartingPosition !== undefined) {
        const functionLogicalId = invokedFunction(template.Resources, p.FunctionName);
        if (!functionLogicalId) throw new Error(`${stack}: ${logicalId} names no function`);
        const filters = (p.FilterCriteria as { Filters?: { Pattern: string }[] } | undefined)?.Filters ?? [];
        streamMappings.push({
          logicalId,
          functionLogicalId,
          batchSize: Number(p.BatchSize ?? 100),
          filters: filters.map((f) => JSON.parse(f.Pattern) as Record<string, unknown>),
          retryAttempts: Number(p.MaximumRetryAttempts ?? -1),
          reportBatchItemFailures: ((p.FunctionResponseTypes as string[] | undefined) ?? []).includes(
            'ReportBatchItemFailures',
          ),
          enabled: p.Enabled !== false,
        });
      } else if (resource.Type === 'AWS::Lambda::EventSourceMapping') {
        const functionLogicalId = invokedFunction(template.Resources, p.FunctionName);
        const queueLogicalId = targetOf(p.EventSourceArn);
        if (!functionLogicalId || !queueLogicalId) throw new Error(`${stack}: ${logicalId} names no function or queue`);
        queueMappings.push({
          logicalId,
          functionLogicalId,
          queueLogicalId,
          batchSize: Number(p.BatchSize ?? 10),
          maximumBatchingWindowSeconds: Number(p.MaximumBatchingWindowInSeconds ?? 0),
          reportBatchItemFailures: ((p.FunctionResponseTypes as string[] | undefined) ?? []).includes(
            'ReportBatchItemFailures',
          ),
          maximumConcurrency: (p.ScalingConfig as { MaximumConcurrency?: number } | undefined)?.MaximumConcurrency,
          enabled: p.Enabled !== false,
        });
      } else if (resource.Type === 'AWS::Events::Rule' && typeof p.ScheduleExpression === 'string') {
        if (p.State === 'DISABLED') continue;
        for (const target of (p.Targets as Record<string, unknown>[] | undefined) ?? []) {
          const functionLogicalId = invokedFunction(template.Resources, target.Arn);
          if (!functionLogicalId) continue;
          schedules.push({
            logicalId,
            functionLogicalId,
            scheduleExpression: p.ScheduleExpression,
            intervalSeconds: rateSeconds(p.ScheduleExpression),
            input: typeof target.Input === 'string' ? target.Input : undefined,
            maximumRetryAttempts: (target.RetryPolicy as { MaximumRetryAttempts?: number } | undefined)
              ?.MaximumRetryAttempts,
          });
        }
      }
    }
  }
  return { dir, templates, functions, routes, queueMappings, schedules, streamMappings };
};

/** The functions something invokes (a route, a queue, a schedule): the service's own, not CDK's helpers. */
export const triggeredFunctions = (assembly: Assembly): FunctionSpec[] => {
  const triggered = new Set([
    ...assembly.routes.map((r) => r.functionLogicalId),
    ...assembly.queueMappings.map((m) => m.functionLogicalId),
    ...assembly.schedules.map((s) => s.functionLogicalId),
    ...assembly.streamMappings.map((m) => m.functionLogicalId),
    // Functions another one invokes by the name its environment holds (the step executor's PythonRunner).
    ...assembly.functions.flatMap((f) =>
      Object.values(f.environment).flatMap((value) =>
        isIntrinsic(value) && 'Ref' in value && assembly.functions.some((g) => g.logicalId === value.Ref)
          ? [String(value.Ref)]
          : [],
      ),
    ),
  ]);
  return assembly.functions.filter((f) => triggered.has(f.logicalId));
};

const accountId = '000000000000';

/** The construct id of a resource (`StepsQueue`, `Data`, `Library`), from its CDK path. */
const constructId = (resource: TemplateResource) => String(resource.Metadata?.['aws:cdk:path'] ?? '').split('/')[1];

const queueNameOf = (url: string) => url.split('/').pop() ?? '';

/**
 * Resolves template values against the local resources: the data table, the library bucket and
 * the queues (and their DLQs), matched by construct id to `platform/definitions.ts`.
 */
export const templateResolver = (assembly: Assembly, resources: LocalResources) => {
  const queueUrlOf = (resource: TemplateResource): string | undefined => {
    const id = constructId(resource);
    for (const q of queues) {
      if (id === `${q.id}Queue`) return resources.queueUrls[q.id];
      if (id === `${q.id}DeadLetterQueue`) return resources.dlqUrls[q.id];
    }
    return undefined;
  };

  const fail = (stack: string, value: unknown, why: string): never => {
    throw new Error(`${stack}: cannot resolve ${JSON.stringify(value)}: ${why}`);
  };

  const resourceIn = (stack: string, logicalId: string) => {
    const resource = assembly.templates.get(stack)?.Resources[logicalId];
    return resource ?? fail(stack, logicalId, 'no such resource');
  };

  const ref = (stack: string, logicalId: string): string => {
    const pseudo: Record<string, string> = {
      'AWS::Region': localAwsConfig.region,
      'AWS::AccountId': accountId,
      'AWS::Partition': 'aws',
      'AWS::URLSuffix': 'amazonaws.com',
      'AWS::StackName': stack,
    };
    if (pseudo[logicalId]) return pseudo[logicalId];
    const resource = resourceIn(stack, logicalId);
    const id = constructId(resource);
    switch (resource.Type) {
      case 'AWS::DynamoDB::Table':
        return id === dataTable.id ? resources.tableName : fail(stack, logicalId, `table ${id} is not ${dataTable.id}`);
      case 'AWS::S3::Bucket':
        return id === libraryBucket.id ? resources.bucket : fail(stack, logicalId, `bucket ${id} is not local`);
      case 'AWS::SQS::Queue':
        return queueUrlOf(resource) ?? fail(stack, logicalId, `queue ${id} is not local`);
      case 'AWS::Lambda::Function':
        return logicalId;
      case 'AWS::Events::EventBus':
        // The operator event bus: the local prefix's, on the EventBridge emulator.
        return operatorEventBusName(resources.prefix);
      case 'AWS::ApiGatewayV2::Api':
        // The HTTP API's id, in the stage's URL the step executor gives providers for their webhooks:
        // the rehearsal's front answers under any host, and its own address is given as PUBLIC_BASE_URL.
        return 'local';
      default:
        return fail(stack, logicalId, `Ref of a ${resource.Type}`);
    }
  };

  const getAtt = (stack: string, logicalId: string, attribute: string): string => {
    const resource = resourceIn(stack, logicalId);
    const region = localAwsConfig.region;
    const value = (() => {
      switch (`${resource.Type}.${attribute}`) {
        case 'AWS::DynamoDB::Table.Arn':
          return `arn:aws:dynamodb:${region}:${accountId}:table/${ref(stack, logicalId)}`;
        case 'AWS::S3::Bucket.Arn':
          return `arn:aws:s3:::${ref(stack, logicalId)}`;
        case 'AWS::SQS::Queue.Arn':
          return `arn:aws:sqs:${region}:${accountId}:${queueNameOf(ref(stack, logicalId))}`;
        case 'AWS::SQS::Queue.QueueName':
          return queueNameOf(ref(stack, logicalId));
        case 'AWS::SQS::Queue.QueueUrl':
          return ref(stack, logicalId);
        case 'AWS::Events::EventBus.Arn':
          return `arn:aws:events:${region}:${accountId}:event-bus/${ref(stack, logicalId)}`;
        case 'AWS::Lambda::Function.Arn':
          return `arn:aws:lambda:${region}:${accountId}:function:${logicalId}`;
        // The run event stream's function URL (GetRun's `links.events`): a function URL's shape; the
        // rehearsal's front serves the stream's route itself, under any host.
        case 'AWS::Lambda::Url.FunctionUrl':
          return `https://${logicalId.toLowerCase()}.lambda-url.${region}.on.aws/`;
        // The files distribution's host (FILES_BASE_URL): a CloudFront name's shape; the rehearsal's
        // local files front answers in its place (bundle-stack.ts).
        case 'AWS::CloudFront::Distribution.DomainName':
          return `${logicalId.toLowerCase()}.cloudfront.net`;
        default:
          return undefined;
      }
    })();
    return value ?? fail(stack, [logicalId, attribute], `Fn::GetAtt ${attribute} of a ${resource.Type}`);
  };

  const importValue = (name: string): string => {
    for (const [stack, template] of assembly.templates) {
      for (const output of Object.values(template.Outputs ?? {})) {
        if (output.Export && resolve(stack, output.Export.Name) === name) return resolve(stack, output.Value);
      }
    }
    return fail('(any)', name, 'no stack exports it');
  };

  const resolve = (stack: string, value: unknown): string => {
    if (typeof value === 'string') return value;
    if (typeof value === 'number' || typeof value === 'boolean') return String(value);
    if (!isIntrinsic(value)) return fail(stack, value, 'not a value or an intrinsic');
    const [[name, argument]] = Object.entries(value) as [[string, unknown]];
    switch (name) {
      case 'Ref':
        return ref(stack, String(argument));
      case 'Fn::GetAtt': {
        const [id, attribute] = Array.isArray(argument) ? argument : String(argument).split('.');
        return getAtt(stack, String(id), String(attribute));
      }
      case 'Fn::ImportValue':
        return importValue(resolve(stack, argument));
      case 'Fn::Join': {
        const [separator, parts] = argument as [string, unknown[]];
        return parts.map((part) => resolve(stack, part)).join(separator);
      }
      case 'Fn::Sub': {
        const [text, variables = {}] = (Array.isArray(argument) ? argument : [argument]) as [
          string,
          Record<string, unknown>?,
        ];
        return text.replace(/\$\{([^}!][^}]*)\}/g, (_, key: string) => {
          if (key in variables) return resolve(stack, variables[key]);
          const [id, attribute] = key.split('.');
          return attribute ? getAtt(stack, String(id), attribute) : ref(stack, key);
        });
      }
      default:
        return fail(stack, value, `${name} is not supported`);
    }
  };

  return {
    resolve,
    /** A function's environment with every reference resolved. */
    environmentOf: (fn: FunctionSpec): Record<string, string> =>
      Object.fromEntries(Object.entries(fn.environment).map(([key, value]) => [key, resolve(fn.stack, value)])),
    /** The local queue URL an event source mapping reads. */
    queueUrlOf: (mapping: QueueMappingSpec, stack: string): string => ref(stack, mapping.queueLogicalId),
    queueArnOf: (mapping: QueueMappingSpec, stack: string): string => getAtt(stack, mapping.queueLogicalId, 'Arn'),
  };
};

export type TemplateResolver = ReturnType<typeof templateResolver>;
