import './support/test-providers.ts';
import fs from 'node:fs';
import path from 'node:path';
import { Stack, Validations } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { Queue } from 'aws-cdk-lib/aws-sqs';
import { build, type Metafile } from 'esbuild';
import { beforeAll, describe, expect, it } from 'vitest';
import { docsAssetTypes } from '../functions/docs/manifest.ts';
import { buildApp } from '../lib/build-app.ts';
import { besideFileCopies } from '../lib/bundling.ts';
import { repoRoot } from '../lib/service-function.ts';
import { contextKeys, stageDefaults } from '../lib/stages.ts';
import { pythonRunner, workers } from '../lib/workers.ts';
import type { Access } from '../platform/access.ts';
import { docsRendererFiles, pythonBoxFiles, pythonRuntimeFiles } from '../platform/beside-files.ts';
import {
  dataTable,
  deadLetterQueue,
  envNames,
  operatorEventsMapping,
  queues,
  streamMappings,
} from '../platform/definitions.ts';
import { bedrockDefaultModels } from '../platform/providers.ts';
import { basePath, httpApiRoutes, routeById, routes } from '../platform/routes.ts';
import { streamFunctionMemoryMb } from '../platform/run-stream.ts';
import { commandActions, transactionItemActions } from './support/command-actions.ts';
import { pinnedProd } from './support/stages.ts';

/** No bundling (fast), and validation failures thrown with the whole report in the message. */
const testContext = { 'aws:cdk:bundling-stacks': [], '@aws-cdk/core:appMode': 'inmemory' };
/** Offline, as `cdk synth` without credentials: environment-agnostic stacks. */
const offline: NodeJS.ProcessEnv = {};

const providerSecretName = 'workflow-run-api/prod/providers/openai-compatible';
/**
 * What these tests pin on prod in place of cdk.json's example values: no pinned default model, in
 * us-west-2, which serves every Bedrock default of the catalogue (platform/model-facts.ts).
 */
const prodPins = {
  region: 'us-west-2',
  [contextKeys.providers]: `openai-compatible:${providerSecretName},bedrock`,
  [contextKeys.alarmEmail]: 'ops@example.com',
  [contextKeys.modelDefaults]: {},
};
/** prod with everything optional switched on, so every construct and acknowledgement is built. */
const prodContext = {
  ...testContext,
  ...pinnedProd(prodPins),
  [contextKeys.dashboard]: 'true',
  [contextKeys.perFunctionAlarms]: 'true',
  [contextKeys.tracing]: 'true',
};

type Resource = {
  Type: string;
  Properties: Record<string, unknown>;
  DeletionPolicy?: string;
  UpdateReplacePolicy?: string;
};
type Resources = Record<string, Resource>;

/**
 * The functions of the stage's routes and workers, with its environment: every function but the
 * Python runner, which has no grant and none of the stage's names (tested on its own).
 */
const stageFunctions = (template: Template) =>
  Object.fromEntries(
    Object.entries(template.findResources('AWS::Lambda::Function')).filter(([id]) => !id.startsWith(pythonRunner.id)),
  );

/** prod with other pins in its cdk.json block (prod takes no `-c` for a pinned key). */
const prodWith = (pins: Record<string, unknown>) => ({ ...prodContext, ...pinnedProd({ ...prodPins, ...pins }) });

const synthesize = (context: Record<string, unknown>) => {
  const built = buildApp(context, offline);
  const statefulTemplate = Template.fromStack(built.stateful);
  const apiTemplate = Template.fromStack(built.api);
  return {
    ...built,
    statefulTemplate,
    apiTemplate,
    statefulResources: statefulTemplate.toJSON().Resources as Resources,
    apiResources: apiTemplate.toJSON().Resources as Resources,
  };
};

/** Passes the cdk-nag AWS Solutions checks: synthesis throws on any finding not acknowledged. */
const expectNagClean = (app: ReturnType<typeof buildApp>['app']) => {
  const assembly = app.synth();
  const report = JSON.parse(fs.readFileSync(path.join(assembly.directory, 'validation-report.json'), 'utf8')) as {
    pluginReports: { pluginName: string; conclusion: string; violations: unknown[] }[];
  };
  expect(report.pluginReports.filter((r) => r.conclusion !== 'success' || r.violations.length > 0)).toEqual([]);
};

// Building and synthesizing takes a few seconds; each stage is built once and shared.
describe('cdk app', { timeout: 120_000 }, () => {
  const dev = synthesize(testContext);
  const prod = synthesize(prodContext);

  it('passes the cdk-nag AWS Solutions checks on both stages with every finding fixed or acknowledged', () => {
    expectNagClean(dev.app);
    expectNagClean(prod.app);
  });

  it('gives every cdk-nag acknowledgement a written reason', () => {
    for (const { app } of [dev, prod]) {
      const acknowledgements = app.node
        .findAll()
        .flatMap((c) => c.node.metadata.filter((m) => m.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY))
        .flatMap((m) => Object.entries(m.data as Record<string, string>));
      expect(acknowledgements.length).toBeGreaterThan(0);
      for (const [id, reason] of acknowledgements) {
        // W3010 is CDK's own, made when the PythonRunner's VPC reads the stack's availability zones.
        expect(id).toMatch(/^(Annotation::)?AwsSolutions-|^CloudFormation-Validate::W3010$/);
        expect(reason.length, id).toBeGreaterThan(40);
      }
    }
  });

  it('creates one API route per route-table entry, under the base path', () => {
    // A streaming route is answered on its function URL instead (test/cdk-stream.test.ts).
    // And the CORS preflight (OPTIONS) of each route that accepts a run token, to the same function.
    const preflights = httpApiRoutes.filter((route) => route.runToken);
    expect(preflights.map((route) => route.id)).toEqual(['GetRun']);
    dev.apiTemplate.resourceCountIs('AWS::ApiGatewayV2::Route', httpApiRoutes.length + preflights.length);
    for (const route of httpApiRoutes) {
      dev.apiTemplate.hasResourceProperties('AWS::ApiGatewayV2::Route', {
        RouteKey: `${route.method} ${basePath}${route.path}`,
      });
    }
    const byKey = (key: string) =>
      Object.values(dev.apiTemplate.findResources('AWS::ApiGatewayV2::Route')).find(
        (r) => (r as { Properties: { RouteKey: string } }).Properties.RouteKey === key,
      ) as { Properties: { Target: unknown } } | undefined;
    for (const route of preflights) {
      const preflight = byKey(`OPTIONS ${basePath}${route.path}`);
      expect(preflight?.Properties.Target).toEqual(
        byKey(`${route.method} ${basePath}${route.path}`)?.Properties.Target,
      );
    }
    expect(basePath).toBe('/api/v1');
  });

  it('configures no CORS on the HTTP API and logs every request of its default stage', () => {
    dev.apiTemplate.resourceCountIs('AWS::ApiGatewayV2::Api', 1);
    dev.apiTemplate.hasResourceProperties('AWS::ApiGatewayV2::Api', {
      ProtocolType: 'HTTP',
      CorsConfiguration: Match.absent(),
    });
    dev.apiTemplate.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      StageName: '$default',
      AutoDeploy: true,
      AccessLogSettings: { DestinationArn: Match.anyValue(), Format: Match.stringLikeRegexp('\\$context\\.requestId') },
    });
  });

  it('runs every function on nodejs24.x, ARM, with the resource and stage environment', () => {
    for (const [built, stage] of [
      [dev, 'dev'],
      [prod, 'prod'],
    ] as const) {
      const functions = stageFunctions(built.apiTemplate);
      expect(Object.keys(functions)).toHaveLength(routes.length + workers.length);
      for (const fn of Object.values(functions)) {
        // The event stream's function is smaller: duration is nearly all its cost (test/cdk-stream.test.ts).
        const stream = fn.Properties.Description === `GET ${basePath}${routeById('GetRunEvents').path}`;
        expect(fn.Properties).toMatchObject({
          Runtime: 'nodejs24.x',
          Architectures: ['arm64'],
          MemorySize: stream ? streamFunctionMemoryMb : 512,
          LoggingConfig: { LogGroup: expect.anything() },
          Environment: {
            Variables: {
              TABLE_NAME: expect.anything(),
              STEPS_QUEUE_URL: expect.anything(),
              WEBHOOKS_QUEUE_URL: expect.anything(),
              LIBRARY_BUCKET: expect.anything(),
              SERVICE_STAGE: stage,
              RETENTION_DAYS: String(stageDefaults[stage].retentionDays),
              SANDBOX_PROVIDERS: String(stageDefaults[stage].sandboxProviders),
              PROVIDER_SECRETS: stage === 'prod' ? JSON.stringify({ 'openai-compatible': providerSecretName }) : '{}',
              CONNECTION_SECRET_PREFIX: `workflow-run-api/${stage}/connections/`,
              OPERATOR_EVENT_BUS: expect.anything(),
              NODE_OPTIONS: '--enable-source-maps',
            },
          },
        });
      }
    }
  });

  it('traces no function by default; -c tracing=true traces every function but the dispatcher, which ticks every minute', () => {
    expect(dev.config.tracing).toBe(false);
    for (const fn of Object.values(stageFunctions(dev.apiTemplate))) {
      expect(fn.Properties.TracingConfig, fn.Properties.Description).toBeUndefined();
    }
    expect(prod.config.tracing).toBe(true);
    for (const fn of Object.values(stageFunctions(prod.apiTemplate))) {
      const dispatcher = fn.Properties.Description === 'runs on the dispatcher schedule';
      expect(fn.Properties.TracingConfig, fn.Properties.Description).toEqual(
        dispatcher ? undefined : { Mode: 'Active' },
      );
    }
    // Untraced, a function's role has no X-Ray permission.
    const devPolicies = JSON.stringify(dev.apiTemplate.findResources('AWS::IAM::Policy'));
    expect(devPolicies).not.toContain('xray:');
    expect(() => buildApp({ ...testContext, tracing: 'on' }, offline)).toThrow(/tracing/);
  });

  it('gives every function 512 MB; -c stepExecutorMemoryMb=N sizes the step executor alone', () => {
    const memoryByDescription = (resources: Resources) =>
      Object.fromEntries(
        Object.values(resources)
          .filter((r) => r.Type === 'AWS::Lambda::Function' && typeof r.Properties.Description === 'string')
          .filter(
            (r) =>
              r.Properties.MemorySize !== pythonRunner.memoryMb || r.Properties.Timeout !== pythonRunner.timeoutSeconds,
          )
          // The event stream's function has its own size (test/cdk-stream.test.ts).
          .filter((r) => r.Properties.Description !== `GET ${basePath}${routeById('GetRunEvents').path}`)
          .map((r) => [r.Properties.Description as string, r.Properties.MemorySize]),
      );
    const executor = 'consumes the Steps queue';
    const byDefault = memoryByDescription(dev.apiResources);
    expect(new Set(Object.values(byDefault))).toEqual(new Set([512]));
    const smaller = memoryByDescription(synthesize({ ...testContext, stepExecutorMemoryMb: '256' }).apiResources);
    expect(smaller[executor]).toBe(256);
    expect(Object.entries(smaller).filter(([d, mb]) => d !== executor && mb !== 512)).toEqual([]);
    for (const bad of ['64', '256.5', 'lots', '20000']) {
      expect(() => buildApp({ ...testContext, stepExecutorMemoryMb: bad }, offline)).toThrow(/stepExecutorMemoryMb/);
    }
  });

  describe('stages', () => {
    it('puts the stage in both stack names, so dev and prod live side by side in one account', () => {
      expect([dev.stateful.stackName, dev.api.stackName]).toEqual([
        'WorkflowRunApi-dev-Stateful',
        'WorkflowRunApi-dev-Api',
      ]);
      expect([prod.stateful.stackName, prod.api.stackName]).toEqual([
        'WorkflowRunApi-prod-Stateful',
        'WorkflowRunApi-prod-Api',
      ]);
      // Nothing has a fixed physical name that the two stages could both claim.
      for (const resources of [dev.statefulResources, dev.apiResources]) {
        for (const resource of Object.values(resources)) {
          for (const key of ['TableName', 'BucketName', 'QueueName', 'FunctionName', 'TopicName', 'DashboardName']) {
            expect(typeof resource.Properties?.[key], `${resource.Type}.${key}`).not.toBe('string');
          }
        }
      }
    });

    it('takes account and region from the CDK CLI on dev, which pins none, and stays environment-agnostic offline', () => {
      expect(Stack.of(dev.api).environment).toBe('aws://unknown-account/unknown-region');
      const deployed = buildApp(testContext, { CDK_DEFAULT_ACCOUNT: '123456789012', CDK_DEFAULT_REGION: 'eu-west-1' });
      expect(deployed.api.account).toBe('123456789012');
      expect(deployed.stateful.region).toBe('eu-west-1');
    });

    it('refuses an unknown stage and malformed context values', () => {
      expect(() => buildApp({ ...testContext, stage: 'staging' }, offline)).toThrow(/stage must be one of dev, prod/);
      expect(() => buildApp({ ...testContext, sandboxProviders: 'yes' }, offline)).toThrow(/sandboxProviders/);
      expect(() => buildApp({ ...testContext, dashboard: '1' }, offline)).toThrow(/dashboard/);
      expect(() => buildApp({ ...testContext, retentionDays: '0' }, offline)).toThrow(/retentionDays/);
      expect(() => buildApp({ ...testContext, alarmEmail: 'not-an-address' }, offline)).toThrow(/alarmEmail/);
      expect(() => buildApp({ ...testContext, stackPrefix: 'a-b' }, offline)).toThrow(/stackPrefix/);
    });

    it('tags every taggable resource, and both stacks, with the service and the stage', () => {
      for (const [built, stage] of [
        [dev, 'dev'],
        [prod, 'prod'],
      ] as const) {
        for (const stack of [built.stateful, built.api]) {
          expect(stack.tags.tagValues()).toEqual({ service: 'workflow-run-api', stage });
        }
        const all = { ...built.statefulResources, ...built.apiResources };
        const mustBeTagged = [
          'AWS::DynamoDB::Table',
          'AWS::S3::Bucket',
          'AWS::SQS::Queue',
          'AWS::Lambda::Function',
          'AWS::IAM::Role',
          'AWS::Logs::LogGroup',
          'AWS::ApiGatewayV2::Api',
          'AWS::ApiGatewayV2::Stage',
          'AWS::Events::Rule',
          'AWS::CloudWatch::Alarm',
          'AWS::SNS::Topic',
        ];
        for (const type of mustBeTagged) {
          // The alarm topic exists only with an alarm email (prod's here).
          if (type === 'AWS::SNS::Topic' && !built.config.alarmEmail) continue;
          expect(
            Object.values(all).some((r) => r.Type === type),
            type,
          ).toBe(true);
        }
        for (const [id, resource] of Object.entries(all)) {
          const tags = resource.Properties?.Tags;
          if (!mustBeTagged.includes(resource.Type) && tags === undefined) continue;
          // CDK's own custom-resource provider (dev's bucket emptier) is a raw resource the tag aspect
          // does not reach; CloudFormation gives it the stack's tags when it creates it.
          if (id.includes('CustomResourceProvider')) continue;
          // ApiGatewayV2 writes tags as a map, everything else as a list.
          const asMap = Array.isArray(tags)
            ? Object.fromEntries((tags as { Key: string; Value: string }[]).map((t) => [t.Key, t.Value]))
            : tags;
          expect(asMap, id).toMatchObject({ service: 'workflow-run-api', stage });
        }
      }
    });

    it('protects prod data: termination protection, table deletion protection, table and bucket retained', () => {
      expect(prod.stateful.terminationProtection).toBe(true);
      expect(prod.api.terminationProtection).toBe(true);
      prod.statefulTemplate.hasResource('AWS::DynamoDB::Table', {
        DeletionPolicy: 'Retain',
        UpdateReplacePolicy: 'Retain',
        Properties: Match.objectLike({ DeletionProtectionEnabled: true }),
      });
      prod.statefulTemplate.hasResource('AWS::S3::Bucket', {
        DeletionPolicy: 'RetainExceptOnCreate',
        UpdateReplacePolicy: 'Retain',
      });
      prod.statefulTemplate.resourceCountIs('Custom::S3AutoDeleteObjects', 0);
    });

    it('lets a failed first prod deploy be retried: nothing kept on a rolled-back creation holds a fixed name', () => {
      const logGroups = Object.entries(prod.apiTemplate.findResources('AWS::Logs::LogGroup'));
      expect(logGroups.length).toBeGreaterThan(20);
      for (const [id, logGroup] of logGroups) {
        expect(logGroup.DeletionPolicy, id).toBe('RetainExceptOnCreate');
        expect(logGroup.UpdateReplacePolicy, id).toBe('Retain');
      }
      // Whatever a creation's rollback keeps (Retain) must have a generated name, or the retry meets
      // it: "already exists".
      for (const resources of [prod.statefulResources, prod.apiResources]) {
        for (const [id, resource] of Object.entries(resources)) {
          if (resource.DeletionPolicy !== 'Retain') continue;
          const names = Object.keys(resource.Properties ?? {}).filter((key) => /Name$/.test(key));
          expect(names, id).toEqual([]);
        }
      }
    });

    it('keeps dev disposable: destroying it deletes the table and empties and deletes the bucket', () => {
      expect(dev.stateful.terminationProtection).toBe(false);
      expect(dev.api.terminationProtection).toBe(false);
      dev.statefulTemplate.hasResource('AWS::DynamoDB::Table', {
        DeletionPolicy: 'Delete',
        Properties: Match.objectLike({ DeletionProtectionEnabled: false }),
      });
      dev.statefulTemplate.hasResource('AWS::S3::Bucket', { DeletionPolicy: 'Delete' });
      dev.statefulTemplate.resourceCountIs('Custom::S3AutoDeleteObjects', 1);
      for (const [id, logGroup] of Object.entries(dev.apiTemplate.findResources('AWS::Logs::LogGroup'))) {
        expect(logGroup.DeletionPolicy, id).toBe('Delete');
      }
    });

    it("repeats a stage's deploy values from its block in cdk.json; on dev the command line's win", () => {
      const stages = { dev: { providers: 'openai-compatible:kept/secret', alarmEmail: 'ops@example.com' }, prod: {} };
      const stored = buildApp({ ...testContext, stages }, offline).config;
      expect(stored.providers).toEqual([{ provider: 'openai-compatible', secretName: 'kept/secret' }]);
      expect(stored.alarmEmail).toBe('ops@example.com');
      const overridden = buildApp({ ...testContext, stages, alarmEmail: 'oncall@example.com' }, offline);
      expect(overridden.config.alarmEmail).toBe('oncall@example.com');
      // Another stage's block does not leak into this one: dev with cdk.json's prod pins.
      const devOfRepository = buildApp({ ...testContext, stages: pinnedProd()[contextKeys.stages] }, offline);
      expect(devOfRepository.config.providers).toEqual([]);
      expect(devOfRepository.config.env).toEqual({ account: undefined, region: undefined });
      const repository = JSON.parse(fs.readFileSync(path.join(repoRoot, 'cdk.json'), 'utf8')) as {
        context: Record<string, unknown>;
      };
      expect(Object.keys(repository.context.stages as object)).toEqual(['dev', 'prod']);
    });

    it('makes model steps run on the sandbox by default only on dev, and says so when a stage has no provider', () => {
      expect(dev.config.sandboxProviders).toBe(true);
      expect(prod.config.sandboxProviders).toBe(false);
      expect(buildApp({ ...testContext, sandboxProviders: 'false' }, offline).config.sandboxProviders).toBe(false);
      // prod cannot be without one: it pins its providers (test/cdk-stages.test.ts).
      const bare = buildApp({ ...testContext, sandboxProviders: 'false' }, offline);
      const warnings = bare.api.node.metadata.filter((m) => m.type === 'aws:cdk:warning').map((m) => String(m.data));
      expect(warnings.join('\n')).toMatch(/no provider .* runs with model steps will be refused/);
    });

    it('takes the provider configuration as provider:secret pairs, only for providers that run on our credentials', () => {
      const one = buildApp({ ...testContext, providers: 'openai-compatible:a/b, ' }, offline);
      expect(one.config.providers).toEqual([{ provider: 'openai-compatible', secretName: 'a/b' }]);
      const fromJson = buildApp({ ...testContext, providers: { 'openai-compatible': 'c' } }, offline);
      expect(fromJson.config.providers).toEqual([{ provider: 'openai-compatible', secretName: 'c' }]);
      for (const bad of [
        'sandbox:x',
        'byok-y:x',
        'closed-w:x',
        'nope:x',
        'openai-compatible',
        'openai-compatible:a b',
      ]) {
        expect(() => buildApp({ ...testContext, providers: bad }, offline), bad).toThrow(/context providers/);
      }
      // An SSM SecureString parameter instead of a secret, and a full secret ARN.
      const parameter = buildApp({ ...testContext, providers: 'openai-compatible:ssm:/a/b' }, offline);
      expect(parameter.config.providers).toEqual([{ provider: 'openai-compatible', secretName: 'ssm:/a/b' }]);
      const arn = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:a/b-AbCdEf';
      expect(buildApp({ ...testContext, providers: `openai-compatible:${arn}` }, offline).config.providers).toEqual([
        { provider: 'openai-compatible', secretName: arn },
      ]);
      expect(() => buildApp({ ...testContext, providers: 'openai-compatible:ssm:a/b' }, offline)).toThrow(
        /context providers/,
      );
      expect(() => buildApp({ ...testContext, providers: 'openai-compatible:a,openai-compatible:b' }, offline)).toThrow(
        /twice/,
      );
    });
  });

  describe('bounded spend', () => {
    it("throttles the HTTP API's default stage at the stage's rate and burst", () => {
      for (const [built, stage] of [
        [dev, 'dev'],
        [prod, 'prod'],
      ] as const) {
        built.apiTemplate.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
          StageName: '$default',
          DefaultRouteSettings: {
            ThrottlingRateLimit: stageDefaults[stage].api.rateLimit,
            ThrottlingBurstLimit: stageDefaults[stage].api.burstLimit,
          },
        });
      }
      // Sized for the spec's 60 requests a minute per key: prod admits fifty keys at their full rate.
      expect(stageDefaults.prod.api.rateLimit).toBe(50);
      expect(stageDefaults.dev.api.rateLimit).toBeLessThan(stageDefaults.prod.api.rateLimit);
    });

    it("caps each queue's event source at the stage's maxConcurrency", () => {
      for (const [built, stage] of [
        [dev, 'dev'],
        [prod, 'prod'],
      ] as const) {
        for (const definition of queues) {
          const queueId = logicalIdOf(built.apiResources, 'AWS::SQS::Queue', `${definition.id}Queue`);
          built.apiTemplate.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
            EventSourceArn: { 'Fn::GetAtt': [queueId, 'Arn'] },
            ScalingConfig: { MaximumConcurrency: stageDefaults[stage].consumerMaxConcurrency[definition.id] },
          });
        }
      }
    });

    it('runs the dispatcher one tick at a time, never retried: reserved concurrency 1, no retries, 60 s max age', () => {
      const dispatcherId = functionIdOf(dev.apiResources, 'runs on the dispatcher schedule');
      expect(dev.apiResources[dispatcherId]?.Properties.ReservedConcurrentExecutions).toBe(1);
      // The PythonRunner's own reservation: test/cdk-python-runner.test.ts; the run event stream's
      // is its own bound (test/cdk-stream.test.ts).
      const [pythonRunnerId] = Object.entries(dev.apiResources).find(
        ([, r]) => r.Type === 'AWS::Lambda::Function' && r.Properties.VpcConfig !== undefined,
      ) ?? [''];
      const streamRoute = routeById('GetRunEvents');
      const streamId = functionIdOf(dev.apiResources, `${streamRoute.method} ${basePath}${streamRoute.path}`);
      for (const [id, fn] of Object.entries(dev.apiResources)) {
        if (fn.Type === 'AWS::Lambda::Function' && id !== dispatcherId && id !== pythonRunnerId && id !== streamId) {
          expect(fn.Properties.ReservedConcurrentExecutions, id).toBeUndefined();
        }
      }
      dev.apiTemplate.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
        FunctionName: { Ref: dispatcherId },
        MaximumRetryAttempts: 0,
        MaximumEventAgeInSeconds: 60,
      });
      dev.apiTemplate.resourceCountIs('AWS::Events::Rule', 1);
      dev.apiTemplate.hasResourceProperties('AWS::Events::Rule', {
        ScheduleExpression: 'rate(1 minute)',
        State: 'ENABLED',
        Targets: [
          Match.objectLike({
            Arn: { 'Fn::GetAtt': [dispatcherId, 'Arn'] },
            RetryPolicy: { MaximumRetryAttempts: 0, MaximumEventAgeInSeconds: 60 },
          }),
        ],
      });
    });

    it("keeps each work queue's visibility at least six times its consumer's timeout", () => {
      for (const definition of queues) {
        const queue = dev.apiResources[logicalIdOf(dev.apiResources, 'AWS::SQS::Queue', `${definition.id}Queue`)];
        const consumer = dev.apiResources[functionIdOf(dev.apiResources, `consumes the ${definition.id} queue`)];
        expect(queue?.Properties.VisibilityTimeout).toBe(definition.visibilityTimeoutSeconds);
        expect(consumer?.Properties.Timeout).toBe(definition.consumerTimeoutSeconds);
        expect(definition.visibilityTimeoutSeconds, definition.id).toBeGreaterThanOrEqual(
          6 * definition.consumerTimeoutSeconds,
        );
      }
    });
  });

  describe('retention', () => {
    it('expires items on the TTL attribute the rate counters and idempotency records already use', () => {
      expect(dataTable.ttlAttribute).toBe('ttl');
      const rateCounter = fs.readFileSync(path.join(repoRoot, 'functions/store/rate-counter.ts'), 'utf8');
      expect(rateCounter).toMatch(/'#ttl': 'ttl'/);
      dev.statefulTemplate.hasResourceProperties('AWS::DynamoDB::Table', {
        TimeToLiveSpecification: { AttributeName: 'ttl', Enabled: true },
      });
    });

    it("expires output files after the stage's retention and uploads after two days, and aborts incomplete uploads after a day", () => {
      for (const [built, days] of [
        [dev, 30],
        [prod, 365],
        [synthesize({ ...testContext, retentionDays: '90' }), 90],
      ] as const) {
        built.statefulTemplate.hasResourceProperties('AWS::S3::Bucket', {
          LifecycleConfiguration: {
            Rules: Match.arrayWith([
              Match.objectLike({ AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 }, Status: 'Enabled' }),
              Match.objectLike({ ExpirationInDays: days, Status: 'Enabled' }),
              // Uploads nothing used are gone a day after (functions/app/uploads.ts keeps them 24 hours).
              Match.objectLike({ Prefix: 'uploads/', ExpirationInDays: 2, Status: 'Enabled' }),
            ]),
          },
        });
        expect(built.config.retentionDays).toBe(days);
        for (const fn of Object.values(stageFunctions(built.apiTemplate))) {
          expect(fn.Properties.Environment).toMatchObject({ Variables: { RETENTION_DAYS: String(days) } });
        }
      }
    });

    it("keeps every log group for the stage's log retention", () => {
      for (const [built, stage] of [
        [dev, 'dev'],
        [prod, 'prod'],
      ] as const) {
        const logGroups = Object.values(built.apiTemplate.findResources('AWS::Logs::LogGroup'));
        // One per function (the Python runner's too), plus the API access log.
        expect(logGroups).toHaveLength(routes.length + workers.length + 2);
        for (const logGroup of logGroups) {
          expect(logGroup.Properties.RetentionInDays).toBe(stageDefaults[stage].logRetentionDays);
        }
      }
    });
  });

  it('keeps the table with PK/SK, on demand, encrypted, with point-in-time recovery', () => {
    dev.statefulTemplate.hasResourceProperties('AWS::DynamoDB::Table', {
      TableName: Match.absent(),
      BillingMode: 'PAY_PER_REQUEST',
      KeySchema: [
        { AttributeName: dataTable.partitionKey.name, KeyType: 'HASH' },
        { AttributeName: dataTable.sortKey.name, KeyType: 'RANGE' },
      ],
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      SSESpecification: { SSEEnabled: true },
    });
  });

  it('projects into each index only what its queries read: never ALL, never a secret or a run request', () => {
    const [table] = Object.values(dev.statefulTemplate.findResources('AWS::DynamoDB::Table'));
    const indexes = table?.Properties.GlobalSecondaryIndexes as {
      IndexName: string;
      KeySchema: unknown;
      Projection: { ProjectionType: string; NonKeyAttributes?: string[] };
    }[];
    expect(indexes.map((i) => i.IndexName)).toEqual(dataTable.indexes.map((i) => i.name));
    for (const definition of dataTable.indexes) {
      const index = indexes.find((i) => i.IndexName === definition.name);
      expect(index?.KeySchema).toEqual([
        { AttributeName: definition.partitionKey.name, KeyType: 'HASH' },
        { AttributeName: definition.sortKey.name, KeyType: 'RANGE' },
      ]);
      expect(index?.Projection).toEqual(
        definition.projection.type === 'KEYS_ONLY'
          ? { ProjectionType: 'KEYS_ONLY' }
          : { ProjectionType: 'INCLUDE', NonKeyAttributes: definition.projection.attributes },
      );
      for (const secret of ['callbackSecret', 'callbackUrl', 'request', 'secretHash', 'connections', 'canvas']) {
        expect(index?.Projection.NonKeyAttributes ?? [], `${definition.name} ${secret}`).not.toContain(secret);
      }
    }
    expect(dataTable.indexes.find((i) => i.name === 'GSI2')?.projection.type).toBe('KEYS_ONLY');
  });

  it('keeps the library bucket private, TLS-only and encrypted', () => {
    dev.statefulTemplate.hasResourceProperties('AWS::S3::Bucket', {
      BucketName: Match.absent(),
      PublicAccessBlockConfiguration: {
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      },
      BucketEncryption: {
        ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }],
      },
    });
    dev.statefulTemplate.hasResourceProperties('AWS::S3::BucketPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        ]),
      },
    });
  });

  it('gives each queue the one dead-letter queue with the defined maxReceiveCount', () => {
    const allQueues = dev.apiTemplate.findResources('AWS::SQS::Queue');
    // The work queues and the stage's one dead-letter queue (the stream mappings' failures go there too).
    expect(Object.keys(allQueues)).toHaveLength(queues.length + 1);
    const dlqId = logicalIdOf(dev.apiResources, 'AWS::SQS::Queue', 'DeadLetterQueue');
    for (const definition of queues) {
      dev.apiTemplate.hasResourceProperties('AWS::SQS::Queue', {
        QueueName: Match.absent(),
        VisibilityTimeout: definition.visibilityTimeoutSeconds,
        SqsManagedSseEnabled: true,
        RedrivePolicy: {
          deadLetterTargetArn: { 'Fn::GetAtt': [dlqId, 'Arn'] },
          maxReceiveCount: definition.maxReceiveCount,
        },
      });
    }
    dev.apiTemplate.hasResourceProperties('AWS::SQS::Queue', {
      MessageRetentionPeriod: deadLetterQueue.retentionDays * 24 * 60 * 60,
      SqsManagedSseEnabled: true,
      RedrivePolicy: Match.absent(),
    });
    // enforceSSL: one TLS-only policy per queue and for the DLQ.
    dev.apiTemplate.resourceCountIs('AWS::SQS::QueuePolicy', queues.length + 1);
  });

  it('consumes each queue with partial batch failures, the defined batch size and the consumer timeout', () => {
    const mappings = Object.values(dev.apiTemplate.findResources('AWS::Lambda::EventSourceMapping')).filter(
      (m) => !m.Properties.StartingPosition,
    );
    expect(mappings).toHaveLength(workers.filter((w) => w.trigger.kind === 'queue').length);
    for (const mapping of mappings) {
      expect(mapping.Properties.FunctionResponseTypes).toEqual(['ReportBatchItemFailures']);
      expect(mapping.Properties.MaximumBatchingWindowInSeconds).toBe(0);
    }
    for (const definition of queues) {
      dev.apiTemplate.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
        BatchSize: definition.batchSize,
        FunctionResponseTypes: ['ReportBatchItemFailures'],
      });
      dev.apiTemplate.hasResourceProperties('AWS::Lambda::Function', {
        Description: `consumes the ${definition.id} queue`,
        Timeout: definition.consumerTimeoutSeconds,
      });
    }
  });

  describe('operator events', () => {
    it("owns the stage's event bus, named after the stack, with no archive, and tells every function its name", () => {
      for (const built of [dev, prod]) {
        const buses = Object.entries(built.apiTemplate.findResources('AWS::Events::EventBus'));
        expect(buses).toHaveLength(1);
        const [busId, bus] = buses[0]!;
        expect(bus.Properties.Name).toBe(`${built.api.stackName}-operator-events`);
        expect(bus.Properties.Name).toContain(built.config.stage);
        built.apiTemplate.resourceCountIs('AWS::Events::Archive', 0);
        for (const fn of Object.values(stageFunctions(built.apiTemplate))) {
          expect(JSON.stringify(fn.Properties.Environment), String(fn.Properties.Description)).toContain(
            `"OPERATOR_EVENT_BUS":{"Ref":"${busId}"}`,
          );
        }
      }
    });

    it("reads the table's stream (new and old images) with the defined filters, retries, batch item failures and DLQ", () => {
      dev.statefulTemplate.hasResourceProperties('AWS::DynamoDB::Table', {
        StreamSpecification: { StreamViewType: 'NEW_AND_OLD_IMAGES' },
      });
      const onStream = Object.values(dev.apiTemplate.findResources('AWS::Lambda::EventSourceMapping')).filter(
        (m) => m.Properties.StartingPosition,
      );
      // One per mapping (test/cdk-webhook-events.test.ts holds the lifecycle events' one).
      expect(onStream).toHaveLength(streamMappings.length);
      const publisher = functionIdOf(dev.apiResources, "reads the table's stream (OperatorEvents)");
      const mapping = onStream.find(
        (m) => JSON.stringify(m.Properties.FunctionName) === JSON.stringify({ Ref: publisher }),
      );
      const dlqId = logicalIdOf(dev.apiResources, 'AWS::SQS::Queue', 'DeadLetterQueue');
      expect(mapping?.Properties).toMatchObject({
        FunctionName: { Ref: publisher },
        EventSourceArn: { 'Fn::ImportValue': expect.stringMatching(/StreamArn/) },
        StartingPosition: 'TRIM_HORIZON',
        BatchSize: operatorEventsMapping.batchSize,
        MaximumBatchingWindowInSeconds: operatorEventsMapping.maxBatchingWindowSeconds,
        FunctionResponseTypes: ['ReportBatchItemFailures'],
        BisectBatchOnFunctionError: true,
        MaximumRetryAttempts: operatorEventsMapping.retryAttempts,
        MaximumRecordAgeInSeconds: operatorEventsMapping.maxRecordAgeSeconds,
        DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': [dlqId, 'Arn'] } } },
      });
      const filters =
        (mapping?.Properties.FilterCriteria as { Filters: { Pattern: string }[] } | undefined)?.Filters ?? [];
      expect(filters.map((f) => JSON.parse(f.Pattern))).toEqual(operatorEventsMapping.filters);
      dev.apiTemplate.hasResourceProperties('AWS::Lambda::Function', {
        Description: "reads the table's stream (OperatorEvents)",
        Timeout: operatorEventsMapping.consumerTimeoutSeconds,
      });
    });

    it("alarms on the stage's dead-letter queue, the stream's failures' destination (the publisher's errors end there)", () => {
      const dlqId = logicalIdOf(dev.apiResources, 'AWS::SQS::Queue', 'DeadLetterQueue');
      const alarms = Object.entries(dev.apiTemplate.findResources('AWS::CloudWatch::Alarm'));
      const arrivals = alarms.filter(([id]) => id.includes('DeadLetterArrivalsAlarm'));
      expect(arrivals).toHaveLength(1);
      expect(JSON.stringify(arrivals[0]?.[1].Properties.Metrics)).toContain(`"Fn::GetAtt":["${dlqId}","QueueName"]`);
      expect(arrivals[0]?.[1].Properties).toMatchObject({ Threshold: 0, ComparisonOperator: 'GreaterThanThreshold' });
      // A failed batch is retried from the stream, then its position lands in the DLQ: one alarm, not two.
      expect(alarms.filter(([id]) => id.includes('EventPublisherErrorsAlarm'))).toHaveLength(0);
    });

    it('lets only the EventPublisher put events, and only on the bus', () => {
      const putters = Object.values(prod.apiResources)
        .filter((r) => r.Type === 'AWS::IAM::Policy')
        .filter((p) => JSON.stringify(p.Properties.PolicyDocument).includes('events:'));
      expect(putters).toHaveLength(1);
      const publisher = functionIdOf(prod.apiResources, "reads the table's stream (OperatorEvents)");
      expect(grantsOf(prod.apiResources, publisher).bus).toEqual(['events:PutEvents']);
    });
  });

  it('outputs the API URL ending in the base path, and the table, bucket and queue URLs', () => {
    const apiOutputs = dev.apiTemplate.toJSON().Outputs as Record<string, { Value: unknown }>;
    expect(JSON.stringify(apiOutputs.ApiUrl?.Value)).toMatch(/\/api\/v1"/);
    for (const definition of queues) expect(apiOutputs[`${definition.id}QueueUrl`]).toBeDefined();
    const statefulOutputs = dev.statefulTemplate.toJSON().Outputs as Record<string, unknown>;
    expect(statefulOutputs.TableName).toBeDefined();
    expect(statefulOutputs.BucketName).toBeDefined();
  });

  describe('least privilege', () => {
    const entries: {
      id: string;
      entry: string;
      access: Access;
      description: string;
      consumes?: string;
      tracing: boolean;
    }[] = [
      ...routes.map((r) => ({
        id: r.id,
        entry: r.entry,
        access: r.grants,
        description: `${r.method} ${basePath}${r.path}`,
        tracing: true,
      })),
      ...workers.map((w) => ({
        id: w.id,
        entry: w.entry,
        access: w.grants,
        description:
          w.trigger.kind === 'queue'
            ? `consumes the ${w.trigger.queue} queue`
            : w.trigger.kind === 'stream'
              ? `reads the table's stream (${w.trigger.mapping})`
              : 'runs on the dispatcher schedule',
        consumes:
          w.trigger.kind === 'queue'
            ? w.trigger.queue
            : w.trigger.kind === 'stream'
              ? `stream:${w.trigger.mapping}`
              : undefined,
        tracing: w.tracing ?? true,
      })),
    ];

    it('allows each function exactly what its route or worker entry lists, on exactly the resources it touches', () => {
      for (const fn of entries) {
        const granted = grantsOf(prod.apiResources, functionIdOf(prod.apiResources, fn.description));
        const expected = expectedGrants(fn.access, {
          consumes: fn.consumes,
          tracing: fn.tracing,
          providerSecrets: [providerSecretName],
          connectionPrefix: 'workflow-run-api/prod/connections/',
          bedrock: true,
        });
        // Behind the edge, each HTTP API route's function reads the origin secret (test/cdk-edge.test.ts);
        // the stream's does once the edge serves it (eventsOrigin).
        const originSecret = Object.keys(prod.apiResources).find(
          (id) => prod.apiResources[id]?.Type === 'AWS::SecretsManager::Secret',
        );
        if (originSecret && httpApiRoutes.some((route) => route.id === fn.id)) {
          expected[JSON.stringify({ Ref: originSecret })] = ['secretsmanager:GetSecretValue'];
        }
        expect(granted, fn.id).toEqual(expected);
      }
    });

    it('lets the step executor invoke exactly the stage’s Bedrock models: each foundation model, each profile and its models', () => {
      const executorId = functionIdOf(prod.apiResources, 'consumes the Steps queue');
      const executorRole = prod.apiResources[executorId]?.Properties.Role as { 'Fn::GetAtt': [string] };
      const role = executorRole['Fn::GetAtt'][0];
      const statements = Object.values(prod.apiResources)
        .filter((r) => r.Type === 'AWS::IAM::Policy' && JSON.stringify(r.Properties.Roles).includes(role))
        .flatMap(
          (p) => (p.Properties.PolicyDocument as { Statement: { Action: unknown; Resource: unknown }[] }).Statement,
        )
        .filter((st) => JSON.stringify(st.Action).includes('bedrock:'));
      expect(statements.map((st) => st.Action)).toEqual(['bedrock:InvokeModel']);
      const resources = JSON.stringify(statements[0]?.Resource);
      for (const id of new Set(Object.values(bedrockDefaultModels))) {
        const profile = /^us\.(.+)$/.exec(id);
        if (profile) {
          expect(resources).toContain(`:inference-profile/${id}`);
          expect(resources).toContain(`:bedrock:*::foundation-model/${profile[1]}`);
        } else expect(resources).toContain(`::foundation-model/${id}"`);
      }
      // A stage that does not name bedrock grants no model; one naming its own models grants those alone.
      const without = synthesize(prodWith({ [contextKeys.providers]: `openai-compatible:${providerSecretName}` }));
      expect(JSON.stringify(without.apiResources)).not.toContain('bedrock:InvokeModel');
      const own = synthesize({ ...prodContext, [contextKeys.bedrockModels]: 'amazon.nova-lite-v1:0' });
      const ownText = JSON.stringify(own.apiResources);
      expect(ownText).toContain('::foundation-model/amazon.nova-lite-v1:0');
      expect(ownText).not.toContain('stable-image-core');
      expect(() => buildApp(prodWith({ [contextKeys.providers]: 'bedrock:some-secret' }), offline)).toThrow(
        /bedrock takes no secret/,
      );
    });

    it('reads a provider from an SSM SecureString parameter when the stage names one (ssm:/…), and only that', () => {
      const parameter = '/workflow-run-api/prod/providers/openai-compatible';
      const withParameter = synthesize(prodWith({ [contextKeys.providers]: `openai-compatible:ssm:${parameter}` }));
      const executor = workers.find((w) => w.id === 'StepExecutor');
      const description = `consumes the ${executor?.trigger.kind === 'queue' ? executor.trigger.queue : ''} queue`;
      const id = functionIdOf(withParameter.apiResources, description);
      expect(grantsOf(withParameter.apiResources, id)).toEqual(
        expectedGrants(executor?.grants ?? {}, {
          consumes: 'Steps',
          tracing: true,
          providerSecrets: [],
          providerParameters: [parameter],
          connectionPrefix: 'workflow-run-api/prod/connections/',
        }),
      );
      expect(withParameter.apiResources[id]?.Properties.Environment).toMatchObject({
        Variables: { PROVIDER_SECRETS: JSON.stringify({ 'openai-compatible': `ssm:${parameter}` }) },
      });
      expectNagClean(withParameter.app);
    });

    it('allows no Scan or BatchWriteItem anywhere, DeleteItem only where a lock is released, no bucket listing', () => {
      const everything = Object.values(prod.apiResources)
        .filter((r) => r.Type === 'AWS::IAM::Policy')
        .flatMap((p) => (p.Properties.PolicyDocument as { Statement: { Action: string | string[] }[] }).Statement)
        .flatMap((s) => (Array.isArray(s.Action) ? s.Action : [s.Action]));
      for (const action of ['dynamodb:Scan', 'dynamodb:BatchWriteItem', 's3:ListBucket']) {
        expect(everything).not.toContain(action);
      }
      // Objects are deleted only where an upload is rejected (read, or named by a run's inputs or an estimate's), and only under uploads/.
      expect(entries.filter((e) => e.access.uploads?.includes('DeleteObject')).map((e) => e.id)).toEqual([
        'RunWorkflow',
        'RunAgent',
        'StartRunBatch',
        'ResumeRun',
        'GetFile',
        'EstimateWorkflowRun',
        'EstimateAgentRun',
        // The MCP server's tool call is a run start.
        'Mcp',
      ]);
      expect(
        entries.filter((e) => (e.access.bucket as readonly string[] | undefined)?.includes('DeleteObject')),
      ).toEqual([]);
      expect(everything.filter((a) => a.includes('*'))).toEqual([]);
      expect(entries.filter((e) => e.access.table?.includes('DeleteItem')).map((e) => e.id)).toEqual([
        // A replacing start (`onConflict: "replace"`) settles the run it cancels: its lock, a queue entry.
        'RunWorkflow',
        'RunAgent',
        'StartRunBatch',
        'CancelRun',
        'ResumeRun',
        // Deleting a team's webhook endpoint.
        'DeleteWebhookEndpoint',
        // The MCP server's tool call is a run start (its code holds the replacing start's settlement).
        'Mcp',
        'StepExecutor',
        // The sweep failing a run whose messages SQS keeps refusing frees its workflow's lock.
        'DeferredDispatcher',
        // A lifecycle event's delivery whose message could not be sent is taken back.
        'RunEventWebhooks',
      ]);
      // The provider webhook verifies signatures with the provider's key (the stage's or a team's own).
      expect(entries.filter((e) => e.access.secrets).map((e) => e.id)).toEqual(['ProviderWebhook', 'StepExecutor']);
      // The run lists read GSI5 only, and the step executor for a bulk cancel's pages; the dispatcher GSI2 and GSI3.
      expect(entries.filter((e) => e.access.indexes?.length).map((e) => e.id)).toEqual([
        'ListRuns',
        'ListDeferredRuns',
        'StepExecutor',
        'DeferredDispatcher',
      ]);
    });

    // Each function's bundle, as esbuild builds it for Lambda but unminified: tree-shaken to the code
    // the handler can reach, with the AWS SDK left as imports, so every `new XCommand(` (and every
    // query input) is a call it can make.
    const bundles = new Map<string, string>();
    /** Each bundle's esbuild metafile output: its inputs and the SDK packages it imports. */
    const outputs = new Map<string, Metafile['outputs'][string]>();
    beforeAll(async () => {
      await Promise.all(
        entries.map(async (fn) => {
          const result = await build({
            absWorkingDir: repoRoot,
            entryPoints: [fn.entry],
            bundle: true,
            write: false,
            outfile: 'index.mjs',
            format: 'esm',
            platform: 'node',
            target: 'node24',
            mainFields: ['module', 'main'],
            // Left as imports, and side-effect free as the SDK's packages declare themselves: an
            // import none of whose names the function uses is dropped, as when the SDK is bundled.
            plugins: [
              {
                name: 'sdk-as-imports',
                setup: (b) =>
                  b.onResolve({ filter: /^@aws-sdk\// }, (args) => ({
                    path: args.path,
                    external: true,
                    sideEffects: false,
                  })),
              },
            ],
            metafile: true,
            logLevel: 'silent',
          });
          bundles.set(fn.id, result.outputFiles[0]?.text ?? '');
          const output = Object.values(result.metafile.outputs)[0];
          if (output) outputs.set(fn.id, output);
        }),
      );
    });

    /** The SDK packages a bundle imports: its clients, lib-dynamodb and the presigner. */
    const sdkPackagesOf = (id: string) =>
      [...new Set((outputs.get(id)?.imports ?? []).map((i) => i.path))]
        .filter((p) => /^@aws-sdk\/(client-|lib-|s3-request-presigner)/.test(p))
        .sort();
    const inputsOf = (id: string) => Object.keys(outputs.get(id)?.inputs ?? {});

    it('loads exactly the AWS clients its grants let it use, and no other (the import graph decides the bundle)', () => {
      for (const fn of entries) {
        const expected = [
          ...(fn.access.table?.length ? ['@aws-sdk/client-dynamodb', '@aws-sdk/lib-dynamodb'] : []),
          ...(fn.access.stepsQueue || fn.access.webhooksQueue ? ['@aws-sdk/client-sqs'] : []),
          ...(fn.access.bucket?.length || fn.access.uploads?.length ? ['@aws-sdk/client-s3'] : []),
          ...(fn.access.secrets ? ['@aws-sdk/client-secrets-manager', '@aws-sdk/client-ssm'] : []),
          ...(fn.access.eventBus ? ['@aws-sdk/client-eventbridge'] : []),
          ...(fn.access.pythonRunner ? ['@aws-sdk/client-lambda'] : []),
          ...(fn.access.bedrock ? ['@aws-sdk/client-bedrock-runtime'] : []),
        ];
        const clients = sdkPackagesOf(fn.id).filter((p) => p !== '@aws-sdk/s3-request-presigner');
        expect(clients, fn.id).toEqual(expected.sort());
        if (sdkPackagesOf(fn.id).includes('@aws-sdk/s3-request-presigner'))
          expect(clients, fn.id).toContain('@aws-sdk/client-s3');
      }
      expect(sdkPackagesOf('ListWorkflows')).toEqual(['@aws-sdk/client-dynamodb', '@aws-sdk/lib-dynamodb']);
    });

    it('keeps the AWS SDK and Powertools out of the public functions', () => {
      // The provider webhook and the file link have no key but read the table (and sign for the bucket):
      // they are not among these.
      const publicIds = routes
        .filter((r) => r.scope === null && r.id !== 'ProviderWebhook' && r.id !== 'GetFileLink')
        .map((r) => r.id);
      expect(publicIds.sort()).toEqual(['GetDocs', 'GetDocsAsset', 'GetNodeType', 'GetOpenApi', 'ListNodeTypes']);
      for (const id of publicIds) {
        expect(sdkPackagesOf(id), id).toEqual([]);
        expect(
          inputsOf(id).filter((p) => /node_modules\/(@aws-sdk|@smithy|@aws-lambda-powertools)\//.test(p)),
          id,
        ).toEqual([]);
      }
    });

    it('carries Powertools metrics only where it records a metric', () => {
      const recording: string[] = [];
      for (const fn of entries) {
        const records = /\bmetrics\d*\.addMetric\(/.test(bundles.get(fn.id) ?? '');
        const carries = inputsOf(fn.id).some((p) => p.includes('node_modules/@aws-lambda-powertools/metrics/'));
        expect(carries, fn.id).toBe(records);
        if (records) recording.push(fn.id);
      }
      expect(recording).toContain('RunWorkflow');
      expect(recording).not.toContain('ListWorkflows');
    });

    it('ships the docs renderer beside the asset function, never in a bundle', () => {
      const assetRoute = routes.find((r) => r.id === 'GetDocsAsset');
      const copies = besideFileCopies(assetRoute?.entry ?? '');
      const renderer = Object.keys(docsAssetTypes).filter((name) => name !== 'docs.js');
      expect(copies.map((c) => c.to).sort()).toEqual(renderer.map((name) => `${docsRendererFiles.dir}/${name}`).sort());
      for (const copy of copies) expect(fs.existsSync(path.join(repoRoot, copy.from)), copy.from).toBe(true);
      for (const fn of entries) {
        expect(
          inputsOf(fn.id).filter((p) => /swagger-ui-dist\/.*\.(js|css)$/.test(p)),
          fn.id,
        ).toEqual([]);
        if (fn.id !== 'GetDocsAsset') expect(besideFileCopies(fn.entry), fn.id).toEqual([]);
      }
      // The renderer is 1.9 MB: far above this bound, which the error table every public handler
      // answers with (it grows by a row per error) reached at 100 KB, then 122 KB
      // (and the origin check's signer, aws4fetch, about 15 KB more), then 151 KB (the 401's
      // reason, the 402's balance, the webhook secret's rule the run-start schemas carry).
      expect(bundles.get('GetDocsAsset')?.length ?? 0).toBeLessThan(200_000);
    });

    it('runs Python with no network route out: isolated subnets, no gateway or endpoint, a group with no rule', () => {
      const resources = prod.apiResources;
      const runner = resources[logicalIdOf(resources, 'AWS::Lambda::Function', `${pythonRunner.id}Function`)];
      const config = runner?.Properties.VpcConfig as { SubnetIds: { Ref: string }[]; SecurityGroupIds: unknown[] };
      expect(config.SubnetIds).toHaveLength(2);
      for (const subnet of config.SubnetIds) {
        expect(resources[subnet.Ref]?.Properties).toMatchObject({ MapPublicIpOnLaunch: false });
      }
      // Nothing that could carry a packet out of the VPC, and no route but the VPC's own.
      const types = new Set(Object.values(resources).map((r) => r.Type));
      for (const type of [
        'AWS::EC2::InternetGateway',
        'AWS::EC2::EgressOnlyInternetGateway',
        'AWS::EC2::NatGateway',
        'AWS::EC2::VPCEndpoint',
        'AWS::EC2::VPCPeeringConnection',
        'AWS::EC2::TransitGatewayAttachment',
        'AWS::EC2::VPNGateway',
        'AWS::EC2::Route',
      ]) {
        expect(types.has(type), type).toBe(false);
      }
      const [group] = config.SecurityGroupIds as { 'Fn::GetAtt': [string, string] }[];
      const rules = resources[group?.['Fn::GetAtt'][0] ?? '']?.Properties;
      // CDK's placeholder for "no egress": one ICMP rule no packet matches (CloudFormation would add allow-all otherwise).
      expect(rules?.SecurityGroupEgress).toEqual([
        {
          CidrIp: '255.255.255.255/32',
          Description: 'Disallow all traffic',
          FromPort: 252,
          IpProtocol: 'icmp',
          ToPort: 86,
        },
      ]);
      expect(rules?.SecurityGroupIngress).toBeUndefined();
      expect(Object.values(resources).filter((r) => r.Type.startsWith('AWS::EC2::SecurityGroup')).length).toBe(1);
    });

    it('runs Python on a function with no grant, which only the step executor may invoke', () => {
      const resources = prod.apiResources;
      const runnerId = logicalIdOf(resources, 'AWS::Lambda::Function', `${pythonRunner.id}Function`);
      // Its logs, and the one documented exception: Lambda manages the function's network interfaces with its role.
      expect(grantsOf(resources, runnerId)).toEqual({
        logs: ['logs:CreateLogStream', 'logs:PutLogEvents'],
        '*': [
          'ec2:AssignPrivateIpAddresses',
          'ec2:CreateNetworkInterface',
          'ec2:DeleteNetworkInterface',
          'ec2:DescribeNetworkInterfaces',
          'ec2:DescribeSubnets',
          'ec2:UnassignPrivateIpAddresses',
        ],
      });
      const runner = resources[runnerId]?.Properties ?? {};
      expect(runner).toMatchObject({ MemorySize: pythonRunner.memoryMb, Timeout: pythonRunner.timeoutSeconds });
      // None of the stage's names (table, queues, bucket, secrets) in its environment; Lambda makes no
      // network namespace, so its runs rely on the isolated VPC (`optional`).
      expect(runner.Environment).toEqual({
        Variables: { NODE_OPTIONS: '--enable-source-maps', [envNames.pythonNetworkNamespace]: 'optional' },
      });
      // -c pythonSnapshots=true trades the seed per run for a cheaper start: the one flag it then has.
      const snapshotting = synthesize({ ...testContext, pythonSnapshots: 'true' }).apiResources;
      expect(
        snapshotting[logicalIdOf(snapshotting, 'AWS::Lambda::Function', `${pythonRunner.id}Function`)]?.Properties,
      ).toMatchObject({ Environment: { Variables: { [envNames.pythonSnapshots]: 'true' } } });
      expect(() => buildApp({ ...testContext, pythonSnapshots: 'sometimes' }, offline)).toThrow(/pythonSnapshots/);
      // -c providerLevels bars providers further on a stage: every function learns it.
      const barred = synthesize({ ...testContext, providerLevels: 'fal:byok_only,replicate:not_allowed' }).apiResources;
      expect(JSON.stringify(barred)).toContain(
        JSON.stringify(JSON.stringify({ fal: 'byok_only', replicate: 'not_allowed' })).slice(1, -1),
      );
      for (const bad of ['fal:open', 'nobody:byok_only', 'fal']) {
        expect(() => buildApp({ ...testContext, providerLevels: bad }, offline)).toThrow(/providerLevels/);
      }
      const invokers = Object.entries(resources)
        .filter(([, r]) => r.Type === 'AWS::IAM::Policy' && JSON.stringify(r.Properties).includes('lambda:'))
        .map(([id]) => id);
      expect(invokers).toEqual([expect.stringMatching(/^StepExecutorRole/)]);
      const executorId = functionIdOf(resources, 'consumes the Steps queue');
      expect(grantsOf(resources, executorId)[`function:${pythonRunner.id}`]).toEqual(['lambda:InvokeFunction']);
      expect(resources[executorId]?.Properties.Environment).toMatchObject({
        Variables: { [envNames.pythonRunner]: { Ref: runnerId } },
      });
      // Pyodide's files and the script of each run's process ship beside the runner's bundle, never inside a bundle.
      expect(besideFileCopies(pythonRunner.entry).map((c) => c.to)).toEqual([
        ...pythonRuntimeFiles.names.map((name) => `${pythonRuntimeFiles.dir}/${name}`),
        `${pythonBoxFiles.dir}/child.mjs`,
      ]);
      for (const fn of entries) {
        expect(
          inputsOf(fn.id).filter((p) => p.includes('node_modules/pyodide/')),
          fn.id,
        ).toEqual([]);
      }
    });

    it('allows every AWS command each function can send, and nothing it cannot', () => {
      for (const fn of entries) {
        const bundle = bundles.get(fn.id) ?? '';
        expect(bundle, fn.id).toContain('handler');
        const sent = actionsSentBy(bundle);
        const granted = grantsOf(prod.apiResources, functionIdOf(prod.apiResources, fn.description));
        const allowed = (action: string, where?: (resource: string) => boolean) =>
          Object.entries(granted).some(
            ([resource, actions]) => actions.includes(action) && (where?.(resource) ?? true),
          );
        for (const action of sent.unmapped)
          expect.fail(
            `${fn.id} sends ${action}: add its IAM action to commandActions (test/support/command-actions.ts)`,
          );
        for (const action of sent.table)
          expect(
            allowed(`dynamodb:${action}`, (r) => r === 'table'),
            `${fn.id} ${action}`,
          ).toBe(true);
        expect(sent.indexQuery, `${fn.id} queries an index`).toBe(Boolean(fn.access.indexes?.length));
        for (const index of sent.indexes) expect(fn.access.indexes, fn.id).toContain(index);
        for (const action of sent.other) expect(allowed(action), `${fn.id} ${action}`).toBe(true);
        // And nothing more: every allowed data-plane action is one the code sends.
        expect([...(fn.access.table ?? [])].sort(), `${fn.id} table actions`).toEqual([...sent.table].sort());
        expect(
          [...new Set([...(fn.access.bucket ?? []), ...(fn.access.uploads ?? [])])].map((a) => `s3:${a}`).sort(),
          `${fn.id} object actions`,
        ).toEqual(sent.other.filter((a) => a.startsWith('s3:')).sort());
        expect(Boolean(fn.access.stepsQueue || fn.access.webhooksQueue), `${fn.id} sends messages`).toBe(
          sent.other.includes('sqs:SendMessage'),
        );
        expect(Boolean(fn.access.eventBus), `${fn.id} puts events`).toBe(sent.other.includes('events:PutEvents'));
        if (sent.other.includes('sqs:ChangeMessageVisibility')) expect(fn.consumes, fn.id).toBeTruthy();
        // Only the step executor and the provider webhook (its signatures) read secrets, and only
        // their bundles load the secret stores' clients.
        const secretStores = /["']@aws-sdk\/client-(secrets-manager|ssm)["']/;
        if (fn.access.secrets) {
          expect(['StepExecutor', 'ProviderWebhook']).toContain(fn.id);
          expect(sent.other).toEqual(expect.arrayContaining(['secretsmanager:GetSecretValue', 'ssm:GetParameter']));
          expect(bundle).toMatch(secretStores);
        } else {
          expect(sent.other, fn.id).not.toContain('secretsmanager:GetSecretValue');
          expect(sent.other, fn.id).not.toContain('ssm:GetParameter');
          expect(bundle, fn.id).not.toMatch(secretStores);
        }
      }
    });
  });
});

describe('cdk-nag wiring', { timeout: 180_000 }, () => {
  it('fails synthesis on a finding nobody acknowledged, and only on that one, under any stack prefix', () => {
    // Another prefix renames the cross-stack exports that the IAM5 acknowledgements are derived from.
    const { app, api } = buildApp({ ...prodContext, stackPrefix: 'Canary' }, offline);
    new Queue(api, 'UnacknowledgedQueue');
    let message = '';
    try {
      app.synth();
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(/AwsSolutions-SQS3/);
    expect(message).toMatch(/Canary-prod-Api\/UnacknowledgedQueue/);
    expect(message).not.toMatch(/AwsSolutions-(IAM|S1|APIG|SNS)/);
  });
});

/** The logical id of the only resource of `type` whose id starts with `prefix`. */
function logicalIdOf(resources: Resources, type: string, prefix: string): string {
  const found = Object.entries(resources).filter(([id, r]) => r.Type === type && id.startsWith(prefix));
  if (found.length !== 1) throw new Error(`${found.length} ${type} named ${prefix}*`);
  return found[0]![0];
}

/** The logical id of the function whose description is `description`. */
function functionIdOf(resources: Resources, description: string): string {
  const found = Object.entries(resources).find(
    ([, r]) => r.Type === 'AWS::Lambda::Function' && r.Properties.Description === description,
  );
  if (!found) throw new Error(`no function described as ${description}`);
  return found[0];
}

/**
 * Every action a function's role allows, by the resource it names: `table`, `index:<name>`,
 * `queue:<id>`, `objects`, `secret:<name>`, `parameter:<name>`, `logs`, or `*`.
 */
function grantsOf(resources: Resources, functionId: string): Record<string, string[]> {
  const fn = resources[functionId];
  if (!fn) throw new Error(`no resource ${functionId}`);
  const role = (fn.Properties.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
  const statements = Object.values(resources)
    .filter(
      (r) => r.Type === 'AWS::IAM::Policy' && (r.Properties.Roles as { Ref: string }[]).some((x) => x.Ref === role),
    )
    .flatMap((p) => (p.Properties.PolicyDocument as { Statement: { Action: unknown; Resource: unknown }[] }).Statement);
  const out: Record<string, string[]> = {};
  for (const statement of statements) {
    const actions = (Array.isArray(statement.Action) ? statement.Action : [statement.Action]) as string[];
    for (const resource of Array.isArray(statement.Resource) ? statement.Resource : [statement.Resource]) {
      const label = resourceLabel(resource);
      out[label] = [...new Set([...(out[label] ?? []), ...actions])].sort();
    }
  }
  return out;
}

function resourceLabel(resource: unknown): string {
  if (resource === '*') return '*';
  const text = JSON.stringify(resource);
  const index = /"\/index\/([^"]+)"/.exec(text);
  if (/ExportsOutputFnGetAttData\w*StreamArn/.test(text)) return 'stream';
  if (text.includes('ExportsOutputFnGetAttData')) return index ? `index:${index[1]}` : 'table';
  if (/"Fn::GetAtt":\["OperatorEventBus[0-9A-F]{8}","Arn"\]/.test(text)) return 'bus';
  if (/"Fn::GetAtt":\["DeadLetterQueue[0-9A-F]{8}","Arn"\]/.test(text)) return 'queue:dlq';
  if (text.includes('ExportsOutputFnGetAttLibrary')) {
    return /"\/teams\/\*"/.test(text) ? 'objects' : /"\/uploads\/\*"/.test(text) ? 'uploads' : 'bucket';
  }
  const queue = /"Fn::GetAtt":\["(Steps|Webhooks)Queue[0-9A-F]{8}","Arn"\]/.exec(text);
  if (queue) return `queue:${queue[1]}`;
  const secret = /:secret:([^"]+)"/.exec(text);
  if (secret) return `secret:${secret[1]}`;
  const parameter = /:parameter\/([^"]+)"/.exec(text);
  if (parameter) return `parameter:${parameter[1]}`;
  if (/"Fn::GetAtt":\["\w*Logs[0-9A-F]{8}","Arn"\]/.test(text)) return 'logs';
  if (/:bedrock:/.test(text)) return 'bedrock';
  const fn = /^\{"Fn::GetAtt":\["(\w+?)Function[0-9A-F]{8}","Arn"\]\}$/.exec(text);
  if (fn) return `function:${fn[1]}`;
  return text;
}

/** What `grantsOf` must find for a function with `access`. */
function expectedGrants(
  access: Access,
  options: {
    consumes?: string;
    tracing: boolean;
    providerSecrets: string[];
    providerParameters?: string[];
    connectionPrefix: string;
    /** The stage turned Bedrock on (`-c providers=…,bedrock`). */
    bedrock?: boolean;
  },
): Record<string, string[]> {
  const out: Record<string, string[]> = { logs: ['logs:CreateLogStream', 'logs:PutLogEvents'] };
  const add = (label: string, actions: string[]) => {
    out[label] = [...new Set([...(out[label] ?? []), ...actions])].sort();
  };
  if (options.tracing) add('*', ['xray:PutTelemetryRecords', 'xray:PutTraceSegments']);
  if (access.table?.length)
    add(
      'table',
      access.table.map((a) => `dynamodb:${a}`),
    );
  for (const index of access.indexes ?? []) add(`index:${index}`, ['dynamodb:Query']);
  if (access.stepsQueue) add('queue:Steps', ['sqs:SendMessage']);
  if (access.webhooksQueue) add('queue:Webhooks', ['sqs:SendMessage']);
  if (access.eventBus) add('bus', ['events:PutEvents']);
  if (access.pythonRunner) add(`function:${pythonRunner.id}`, ['lambda:InvokeFunction']);
  if (access.bedrock && options.bedrock) add('bedrock', ['bedrock:InvokeModel']);
  if (options.consumes?.startsWith('stream:')) {
    // The stream event source: reading this table's stream (listing streams takes no resource),
    // and sending a failed batch's position to its dead-letter queue.
    add('stream', ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator']);
    add('*', ['dynamodb:ListStreams']);
    // The stage's one dead-letter queue (lib/api-stack.ts).
    add('queue:dlq', ['sqs:GetQueueAttributes', 'sqs:GetQueueUrl', 'sqs:SendMessage']);
  } else if (options.consumes) {
    add(`queue:${options.consumes}`, [
      'sqs:ChangeMessageVisibility',
      'sqs:DeleteMessage',
      'sqs:GetQueueAttributes',
      'sqs:GetQueueUrl',
      'sqs:ReceiveMessage',
    ]);
  }
  if (access.bucket?.length)
    add(
      'objects',
      access.bucket.map((a) => `s3:${a}`),
    );
  if (access.uploads?.length)
    add(
      'uploads',
      access.uploads.map((a) => `s3:${a}`),
    );
  if (access.secrets) {
    for (const name of options.providerSecrets) add(`secret:${name}-??????`, ['secretsmanager:GetSecretValue']);
    add(`secret:${options.connectionPrefix}*`, ['secretsmanager:GetSecretValue']);
    for (const name of options.providerParameters ?? []) add(`parameter:${name.slice(1)}`, ['ssm:GetParameter']);
    add(`parameter:${options.connectionPrefix}*`, ['ssm:GetParameter']);
  }
  return out;
}

/** The object literal around `at`, by brace counting (enough for the query inputs of a bundle). */
function objectAround(text: string, at: number): string {
  let start = at;
  for (let depth = 0; start > 0; start--) {
    if (text[start] === '}') depth++;
    else if (text[start] === '{' && depth-- === 0) break;
  }
  let end = start;
  for (let depth = 0; end < text.length; end++) {
    if (text[end] === '{') depth++;
    else if (text[end] === '}' && --depth === 0) break;
  }
  return text.slice(start, end + 1);
}

/**
 * The IAM actions a bundle's SDK calls need: table item actions, index queries, and the rest. A
 * Query is found by its input (every one has a `KeyConditionExpression`), whether it is sent with
 * `new QueryCommand(…)` or through lib-dynamodb's `paginateQuery`; an input naming `IndexName`
 * queries an index.
 */
function actionsSentBy(bundle: string) {
  const table = new Set<string>();
  const indexes = new Set<string>();
  const other = new Set<string>();
  const unmapped = new Set<string>();
  let indexQuery = false;
  const queries = [...bundle.matchAll(/\bKeyConditionExpression:/g)].map((m) => objectAround(bundle, m.index ?? 0));
  const sendsQueries = /new QueryCommand\d*\(|\bpaginateQuery\d*\(/.test(bundle);
  if (sendsQueries && queries.length === 0) table.add('Query');
  for (const query of sendsQueries ? queries : []) {
    const index = /IndexName:\s*([^,\n}]+)/.exec(query)?.[1];
    if (index === undefined) table.add('Query');
    else {
      indexQuery = true;
      const literal = /^["'](\w+)["']$/.exec(index.trim())?.[1];
      if (literal) indexes.add(literal);
    }
  }
  if (/\bpaginateScan\d*\(/.test(bundle)) table.add('Scan');
  for (const match of bundle.matchAll(/new (\w+?Command)\d*\(/g)) {
    const command = match[1] ?? '';
    if (command === 'QueryCommand') continue;
    if (command === 'TransactWriteCommand') {
      // Items are often built elsewhere (helpers returning `{ Update: ... }`): every item key in the bundle counts.
      for (const item of bundle.matchAll(/\b(Put|Update|Delete|ConditionCheck)\s*:/g)) {
        table.add(transactionItemActions[item[1] ?? ''] ?? '');
      }
    } else if (commandActions[command]?.table) table.add(commandActions[command].table);
    else if (commandActions[command]?.other) {
      other.add(commandActions[command].other);
      if (commandActions[command].source) other.add(commandActions[command].source);
    } else unmapped.add(command);
  }
  return { table: [...table], indexes: [...indexes], indexQuery, other: [...other], unmapped: [...unmapped] };
}
