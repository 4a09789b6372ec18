/**
 * Least privilege at run time (the audit project, run after the integration project): every AWS
 * command each function's handler sent during the integration suite (`local/aws-command-log.ts`,
 * one SDK middleware keyed by the function being invoked) is allowed on its resource by that
 * function's synthesized policy, and every action a policy allows was sent at least once, or is
 * listed in `notExercised` with the reason. `test/cdk.test.ts` checks the same policies statically
 * against the commands each bundle can send.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { type CfnElement, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../lib/build-app.ts';
import { originSecretAction } from '../lib/origin-secret.ts';
import { networkInterfaceActions } from '../lib/service-function.ts';
import { contextKeys } from '../lib/stages.ts';
import { pythonRunner, workers } from '../lib/workers.ts';
import { type AwsCommandRecord, canonicalArn } from '../local/aws-command-log.ts';
import { functionIds } from '../local/invocation.ts';
import { deadLetterQueue, libraryBucket, queues, tables } from '../platform/definitions.ts';
import { awsCommandLogDir } from '../vitest.config.ts';
import { iamActionOf } from './support/command-actions.ts';
import { pinnedProd } from './support/stages.ts';

/**
 * Actions a policy allows that the integration suite never sends, each with the reason. Keyed by
 * function id, then IAM action (every resource the policy names for it).
 */
const replaceReason =
  'A replacing start (`onConflict: "replace"`) cancels the run in progress with the cancel\'s own code, whose ' +
  'settlement deletes its lock (functions/app/cancel-run.ts `cancelReplaced`); test/run-queue.int.test.ts exercises it on RunWorkflow.';
const replaceWebhookReason =
  "A replacing start queues the replaced run's end webhook with the cancel's own code (functions/app/cancel-run.ts " +
  '`cancelReplaced`); test/run-queue.int.test.ts exercises it on RunWorkflow.';
const notExercised: Record<string, Record<string, string>> = {
  RunAgent: { 'dynamodb:DeleteItem': replaceReason, 'sqs:SendMessage': replaceWebhookReason },
  // The MCP server's tool call is RunWorkflow's start (startWorkflowRun) with `onConflict: "queue"`.
  Mcp: {
    'dynamodb:DeleteItem':
      "The start's code holds the replacing start's settlement (a tool call only queues: it never replaces); " +
      'test/run-queue.int.test.ts exercises it on RunWorkflow.',
    'sqs:SendMessage':
      "The webhooks queue: the replaced run's end webhook, which a tool call (queueing, never replacing) does not " +
      'send; test/run-queue.int.test.ts exercises it on RunWorkflow.',
    's3:PutObject':
      "A tool call copies an upload given as a file input to the run's own key with the run start's own code; " +
      'test/file-inputs.int.test.ts exercises it on RunWorkflow.',
    's3:GetObject':
      "A tool call reads an upload given as a file input with the run start's own code (functions/app/run-inputs.ts); " +
      'test/file-inputs.int.test.ts exercises it on RunWorkflow.',
    's3:DeleteObject':
      "A tool call checks a file input with the run start's own code, which deletes a rejected upload; " +
      'test/file-inputs.int.test.ts exercises it on RunWorkflow.',
  },
  StartRunBatch: {
    'dynamodb:DeleteItem': replaceReason,
    'sqs:SendMessage': replaceWebhookReason,
    's3:GetObject':
      "A batch item reads an upload given as a file input with the run start's own code (functions/app/run-inputs.ts); " +
      'test/file-inputs.int.test.ts exercises it on RunWorkflow.',
    's3:DeleteObject':
      "A batch item checks a file input with the run start's own code (functions/app/run-inputs.ts), which deletes a " +
      'rejected upload; test/file-inputs.int.test.ts exercises it on RunWorkflow.',
    's3:PutObject':
      "A batch item copies an upload given as a file input with the run start's own code (functions/app/run-inputs.ts); " +
      'test/file-inputs.int.test.ts exercises it on RunWorkflow.',
  },
  ResumeRun: {
    'dynamodb:DeleteItem': replaceReason,
    'sqs:SendMessage': replaceWebhookReason,
    's3:GetObject':
      "A resume reads an upload given again as a file input with the run start's own code (functions/app/run-inputs.ts); " +
      'test/file-inputs.int.test.ts exercises it on RunWorkflow.',
    's3:DeleteObject':
      "A resume checks a file input given again with the run start's own code (functions/app/run-inputs.ts), which " +
      'deletes a rejected upload; test/file-inputs.int.test.ts exercises it on RunWorkflow.',
    's3:PutObject':
      "A resume copies an upload given again as a file input with the run start's own code (functions/app/run-inputs.ts, " +
      'one copy per distinct upload); its carried files are shared, never copied; test/file-inputs.int.test.ts exercises it on RunWorkflow.',
  },
  EstimateWorkflowRun: {
    'dynamodb:Query':
      "A busy workflow's lock read (activeJobOf) queries its queue only in the moment the lock is handed from an " +
      'ended run to a queued one; test/run-queue.int.test.ts exercises it on RunWorkflow.',
  },
  EstimateAgentRun: {
    's3:GetObject':
      "An agent's estimate checks an upload given as a file input with EstimateWorkflowRun's code (the run start's, " +
      'functions/app/run-inputs.ts); test/estimate.int.test.ts exercises it on EstimateWorkflowRun.',
    's3:DeleteObject':
      "An agent's estimate reads a rejected upload with EstimateWorkflowRun's code, which deletes it; " +
      'test/estimate.int.test.ts exercises it on EstimateWorkflowRun.',
  },
  GetRunEvents: {
    'dynamodb:PutItem':
      "It creates the file links' (or the output cursors') signing key when a run it streams links the table's " +
      "first file: GetRun's own code (functions/app/read-run.ts), exercised on GetRun by test/file-links.int.test.ts.",
  },
  ProviderWebhook: {
    'secretsmanager:GetSecretValue':
      "It reads a provider's key (to fetch Replicate's signing secret) from the stage's store only when deployed; " +
      'the integration suite gives the key in the environment (test/provider-jobs.int.test.ts), as npm start does.',
    'ssm:GetParameter':
      "It reads a provider's key from an SSM parameter only when deployed; the suite gives it in the environment.",
  },
};

/**
 * Resources that are no stage's, where a test points a function on purpose to see it fail as in an
 * outage: commands on them are not checked against the policy.
 */
const outageResources: Record<string, string> = {
  [`arn:${canonicalArn.partition}:dynamodb:${canonicalArn.region}:${canonicalArn.account}:table/missing-table`]:
    'test/local-api.int.test.ts serves the API over a table that does not exist, to see a storage failure answered with 500.',
  [`arn:${canonicalArn.partition}:sqs:${canonicalArn.region}:${canonicalArn.account}:mcp-unread-steps`]:
    "test/mcp.int.test.ts sends a tool call's steps to a queue no worker reads, so its run outlasts the wait.",
};

/** Actions Lambda itself sends with a function's role, never its code. */
const sentByLambda: Record<string, string> = {
  'logs:CreateLogStream': "Lambda writes the function's logs to its log group.",
  'logs:PutLogEvents': "Lambda writes the function's logs to its log group.",
  'xray:PutTraceSegments': 'Lambda sends the traces of active tracing.',
  'xray:PutTelemetryRecords': 'Lambda sends the traces of active tracing.',
  // The PythonRunner's VPC (lib/isolated-network.ts): Lambda attaches and removes its network interfaces.
  ...Object.fromEntries(
    networkInterfaceActions.map((action) => [
      action,
      "Lambda manages a VPC function's network interfaces with its role.",
    ]),
  ),
};

/** Actions the SQS event source mapping sends with a queue worker's role, on the queue it consumes. */
const sentByEventSource = [
  'sqs:ReceiveMessage',
  'sqs:DeleteMessage',
  'sqs:ChangeMessageVisibility',
  'sqs:GetQueueAttributes',
  'sqs:GetQueueUrl',
];

/**
 * Actions the DynamoDB stream event source sends with a stream worker's role: reading the table's
 * stream (listing streams takes no resource), and sending a batch that failed every retry to its DLQ.
 */
const sentByStreamSource = {
  stream: ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator', 'dynamodb:ListStreams'],
  deadLetterQueue: ['sqs:SendMessage', 'sqs:GetQueueAttributes', 'sqs:GetQueueUrl'],
};

// ---- The log this vitest run's integration project wrote.

const readLog = () => {
  const marker = path.join(awsCommandLogDir, 'run.json');
  if (!existsSync(marker)) return { error: 'no AWS command log: run the integration project first (npm test)' };
  const { vitestPid } = JSON.parse(readFileSync(marker, 'utf8')) as { vitestPid: number };
  if (vitestPid !== process.ppid && vitestPid !== process.pid) {
    return {
      error: 'the AWS command log is from another vitest run: run the integration project with this one (npm test)',
    };
  }
  const records = readdirSync(awsCommandLogDir)
    .filter((file) => file.endsWith('.jsonl'))
    .flatMap((file) => readFileSync(path.join(awsCommandLogDir, file), 'utf8').split('\n'))
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as AwsCommandRecord);
  return { records: [...new Map(records.map((r) => [JSON.stringify(r), r])).values()] };
};

// ---- Each function's synthesized policy, with its resources as ARNs in the log's canonical account.

type TemplateJson = {
  Resources: Record<string, { Type: string; Properties: Record<string, unknown> }>;
  Outputs?: object;
};
type Statement = { Effect: 'Allow' | 'Deny'; Action: string | string[]; Resource: unknown };

const { partition, region, account } = canonicalArn;

/** The ARN of a resource of the stack, named as the local default names it (by definition id). */
const arnOf = (logicalId: string, type: string): string => {
  switch (type) {
    case 'AWS::DynamoDB::Table': {
      const name = tables.find((t) => logicalId.startsWith(t.id))?.id ?? logicalId;
      return `arn:${partition}:dynamodb:${region}:${account}:table/${name}`;
    }
    case 'AWS::SQS::Queue': {
      const name = logicalId.startsWith(`${deadLetterQueue.id}Queue`)
        ? deadLetterQueue.id
        : (queues.find((q) => logicalId.startsWith(`${q.id}Queue`))?.id ?? logicalId);
      return `arn:${partition}:sqs:${region}:${account}:${name}`;
    }
    case 'AWS::S3::Bucket':
      return `arn:${partition}:s3:::${logicalId.startsWith(libraryBucket.id) ? libraryBucket.id : logicalId}`;
    case 'AWS::Lambda::Function':
      return `arn:${partition}:lambda:${region}:${account}:function:${logicalId.startsWith(pythonRunner.id) ? pythonRunner.id : logicalId}`;
    case 'AWS::Events::EventBus':
      return `arn:${partition}:events:${region}:${account}:event-bus/${logicalId.startsWith('OperatorEventBus') ? 'OperatorEventBus' : logicalId}`;
    case 'AWS::SecretsManager::Secret':
      return `arn:${partition}:secretsmanager:${region}:${account}:secret:${logicalId}-??????`;
    case 'AWS::Logs::LogGroup':
      return `arn:${partition}:logs:${region}:${account}:log-group:${logicalId}:*`;
    default:
      throw new Error(`no ARN for ${type} ${logicalId}: teach arnOf`);
  }
};

/** A policy resource (CloudFormation intrinsics included) as an ARN pattern. */
const resolver = (templates: TemplateJson[]) => {
  const resolve = (value: unknown, template: TemplateJson): string => {
    if (typeof value === 'string') return value;
    const [[fn, argument] = []] = Object.entries(value as object);
    const pseudo: Record<string, string> = {
      'AWS::Partition': partition,
      'AWS::Region': region,
      'AWS::AccountId': account,
      'AWS::URLSuffix': 'amazonaws.com',
    };
    if (fn === 'Ref' && pseudo[argument]) return pseudo[argument];
    // A secret's Ref is its ARN.
    if (fn === 'Ref' && template.Resources[argument]?.Type === 'AWS::SecretsManager::Secret') {
      return arnOf(argument, 'AWS::SecretsManager::Secret');
    }
    if (fn === 'Fn::Join') {
      const [separator, parts] = argument as [string, unknown[]];
      return parts.map((part) => resolve(part, template)).join(separator);
    }
    if (fn === 'Fn::GetAtt') {
      const [logicalId, attribute] = argument as [string, string];
      const resource = template.Resources[logicalId];
      if (attribute === 'Arn' && resource) return arnOf(logicalId, resource.Type);
      // A table's stream: its ARN is the table's with `/stream/<time it was enabled>`.
      if (attribute === 'StreamArn' && resource) return `${arnOf(logicalId, resource.Type)}/stream/*`;
    }
    if (fn === 'Fn::ImportValue') {
      for (const exporter of templates) {
        for (const output of Object.values(exporter.Outputs ?? {}) as {
          Value: unknown;
          Export?: { Name: unknown };
        }[]) {
          if (output.Export && JSON.stringify(output.Export.Name) === JSON.stringify(argument)) {
            return resolve(output.Value, exporter);
          }
        }
      }
    }
    throw new Error(`cannot resolve ${JSON.stringify(value)}: teach the audit's resolver`);
  };
  return resolve;
};

interface Grant {
  action: string;
  resource: string;
}

/**
 * The stage whose policies are audited: prod with a provider secret, the stage test/secrets.int.test.ts
 * runs the step executor as (its provider secret and connection prefix); every other grant is the
 * same on every stage. Without bundling: only the policies are read.
 */
const auditedStage = {
  'aws:cdk:bundling-stacks': [],
  '@aws-cdk/core:appMode': 'inmemory',
  // Pinned to the log's canonical account and region, as the emulators' ARNs are.
  ...pinnedProd({
    account: canonicalArn.account,
    region: canonicalArn.region,
    [contextKeys.providers]: 'openai-compatible:workflow-run-api/prod/providers/openai-compatible',
    [contextKeys.modelDefaults]: {},
  }),
};

/** What each function's role allows: one entry per action and resource pattern. */
const policies = (): Map<string, Grant[]> => {
  const built = buildApp(auditedStage, {});
  const api = Template.fromStack(built.api).toJSON() as TemplateJson;
  const stateful = Template.fromStack(built.stateful).toJSON() as TemplateJson;
  const resolve = resolver([api, stateful]);
  const out = new Map<string, Grant[]>();
  for (const [id, fn] of built.api.functions) {
    const functionId = Stack.of(fn).getLogicalId(fn.node.defaultChild as CfnElement);
    const fnResource = api.Resources[functionId];
    if (!fnResource) throw new Error(`no function resource for ${id}`);
    const role = (fnResource.Properties.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
    const roleProperties = api.Resources[role]?.Properties ?? {};
    if (roleProperties.Policies || roleProperties.ManagedPolicyArns) {
      throw new Error(`${id}'s role has inline or managed policies: teach the audit to read them`);
    }
    const statements = Object.values(api.Resources)
      .filter(
        (r) => r.Type === 'AWS::IAM::Policy' && (r.Properties.Roles as { Ref: string }[]).some((x) => x.Ref === role),
      )
      .flatMap((p) => (p.Properties.PolicyDocument as { Statement: Statement[] }).Statement);
    const grants: Grant[] = [];
    for (const statement of statements) {
      if (statement.Effect !== 'Allow') throw new Error(`${id} has a ${statement.Effect} statement: teach the audit`);
      const resources = Array.isArray(statement.Resource) ? statement.Resource : [statement.Resource];
      for (const action of [statement.Action].flat()) {
        for (const resource of resources) grants.push({ action, resource: resolve(resource, api) });
      }
    }
    out.set(id, grants);
  }
  return out;
};

/** IAM's wildcards: `*` any run of characters, `?` one character. */
const matches = (pattern: string, value: string, caseless = false) =>
  new RegExp(
    `^${pattern
      .split('')
      .map((c) => (c === '*' ? '.*' : c === '?' ? '.' : c.replace(/[.+^${}()|[\]\\]/g, '\\$&')))
      .join('')}$`,
    caseless ? 'i' : '',
  ).test(value);

const allows = (grant: Grant, action: string, resource: string) =>
  matches(grant.action, action, true) && matches(grant.resource, resource);

/**
 * The origin check's read of the origin secret (functions/http/origin-check.ts) is signed by
 * aws4fetch, not sent through the SDK the command log records; test/origin-check.int.test.ts
 * exercises it against the local secret store, and test/cdk-edge.test.ts holds each grant to it.
 */
const sentOutsideTheSdk = (grant: Grant) =>
  grant.action === originSecretAction && /:secretsmanager:.*:secret:OriginSecret/.test(grant.resource);

/** Whether the function's code never sends this grant through the SDK (Lambda or its event source does). */
const sentByPlatform = (functionId: string, grant: Grant) => {
  if (sentByLambda[grant.action] || sentOutsideTheSdk(grant)) return true;
  const worker = workers.find((w) => w.id === functionId);
  if (worker?.trigger.kind === 'stream') {
    return (
      (sentByStreamSource.stream.includes(grant.action) && /(:table\/Data\/stream\/\*|^\*)$/.test(grant.resource)) ||
      (sentByStreamSource.deadLetterQueue.includes(grant.action) && grant.resource.endsWith(`:${deadLetterQueue.id}`))
    );
  }
  if (worker?.trigger.kind !== 'queue' || !sentByEventSource.includes(grant.action)) return false;
  return grant.resource === `arn:${partition}:sqs:${region}:${account}:${worker.trigger.queue}`;
};

const describeRecord = (r: AwsCommandRecord) => `${r.command}${r.item ? ` (${r.item})` : ''} on ${r.resource}`;

describe('least privilege at run time: the AWS commands each function sent during the integration suite', {
  timeout: 120_000,
}, () => {
  const log = readLog();
  const records = log.records ?? [];
  const granted = policies();

  /** Every check below reads the log: without one from this run, each fails with the reason alone. */
  const problem =
    log.error ?? (records.length === 0 ? 'no AWS command recorded: is the command log wired into the local deps?' : '');
  const requireLog = () => {
    if (problem) expect.fail(problem);
  };

  it('were recorded by this run', requireLog);

  it('were each sent by a known function, inside its invocation', () => {
    requireLog();
    expect([...granted.keys()].sort()).toEqual([...functionIds].sort());
    const unknown = records
      .filter((r) => r.function === null || !functionIds.includes(r.function))
      .map((r) =>
        r.function === null
          ? `${r.entry} sent ${describeRecord(r)} outside any invocation: call its handler through invokedAs (local/invocation.ts)`
          : `unknown function ${r.function} sent ${describeRecord(r)}`,
      );
    expect(unknown).toEqual([]);
  });

  it("are each allowed on their resource by the sending function's policy", () => {
    requireLog();
    const refused: string[] = [];
    for (const record of records) {
      if (record.function === null || outageResources[record.resource]) continue;
      const action = iamActionOf(record.command, record.item);
      if (action === undefined) {
        refused.push(
          `${record.function} sent ${describeRecord(record)}: add its IAM action to commandActions (test/support/command-actions.ts)`,
        );
        continue;
      }
      const grants = granted.get(record.function) ?? [];
      if (!grants.some((grant) => allows(grant, action, record.resource))) {
        refused.push(
          `${record.function} sent ${describeRecord(record)}, but its policy does not allow ${action} on ${record.resource}`,
        );
      }
    }
    expect(refused).toEqual([]);
  });

  it('include every action each policy allows, unless notExercised gives the reason', () => {
    requireLog();
    const unused: string[] = [];
    for (const [functionId, grants] of granted) {
      const sent = records
        .filter((r) => r.function === functionId)
        .map((r) => ({ action: iamActionOf(r.command, r.item), resource: r.resource }));
      for (const grant of grants) {
        if (sentByPlatform(functionId, grant) || notExercised[functionId]?.[grant.action]) continue;
        if (!sent.some((s) => s.action !== undefined && allows(grant, s.action, s.resource))) {
          unused.push(
            `${functionId} may ${grant.action} on ${grant.resource}, but never did: exercise it in an integration test, ` +
              'drop the grant, or list it in notExercised with the reason',
          );
        }
      }
    }
    expect(unused).toEqual([]);
  });

  it('lists in notExercised only actions the policy allows and the suite never sent, each with a reason, and only outage resources a test uses', () => {
    requireLog();
    const stale: string[] = [];
    for (const [functionId, actions] of Object.entries(notExercised)) {
      for (const [action, reason] of Object.entries(actions)) {
        const grants = (granted.get(functionId) ?? []).filter((g) => g.action === action);
        if (grants.length === 0) stale.push(`${functionId} ${action}: its policy does not allow it`);
        const sentEverywhere = grants.every((g) =>
          records.some((r) => r.function === functionId && allows(g, iamActionOf(r.command, r.item) ?? '', r.resource)),
        );
        if (grants.length > 0 && sentEverywhere) stale.push(`${functionId} ${action}: the suite sent it`);
        if (reason.length < 20) stale.push(`${functionId} ${action}: give the reason`);
      }
    }
    for (const resource of Object.keys(outageResources)) {
      if (!records.some((r) => r.resource === resource)) stale.push(`outage resource ${resource}: no test uses it`);
    }
    expect(stale).toEqual([]);
  });
});
