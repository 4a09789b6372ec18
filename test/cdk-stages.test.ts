/**
 * Pinned stages (lib/stage-pins.ts) and the stage's budget (lib/budget.ts), on the synthesized
 * templates: prod's configuration comes from cdk.json and nowhere else, a deploy from the wrong
 * account or without a pin fails before anything is built, and a bare `-c stage=prod` keeps its
 * providers and alarm actions.
 */
import { Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../lib/build-app.ts';
import { defaultMonthlyBudgetUsd, requiredPins } from '../lib/stage-pins.ts';
import { contextKeys, stageConfig } from '../lib/stages.ts';
import { envNames } from '../platform/definitions.ts';
import { bedrockDefaultModels } from '../platform/providers.ts';
import { pinnedProd, repositoryStages } from './support/stages.ts';

/** No bundling (fast), and validation failures thrown with the whole report in the message. */
const testContext = { 'aws:cdk:bundling-stacks': [], '@aws-cdk/core:appMode': 'inmemory' };
/** Offline, as `cdk synth` without credentials. */
const offline: NodeJS.ProcessEnv = {};

type Resources = Record<string, { Type: string; Properties: Record<string, unknown> }>;
const resourcesOf = (stack: Stack) => Template.fromStack(stack).toJSON().Resources as Resources;
const ofType = (resources: Resources, type: string) => Object.values(resources).filter((r) => r.Type === type);

describe('pinned stages', { timeout: 120_000 }, () => {
  const pins = repositoryStages().prod ?? {};

  it("pins every required key of prod in the repository's cdk.json, with example values to replace", () => {
    expect(Object.keys(pins).sort()).toEqual([...requiredPins.prod].sort());
    expect(pins).toMatchObject({ account: '111111111111', region: 'us-west-2', monthlyBudgetUsd: 500 });
    expect(repositoryStages().dev).toEqual({});
  });

  it('fails a prod synth that misses any pin, naming it', () => {
    for (const key of requiredPins.prod) {
      expect(() => buildApp({ ...testContext, ...pinnedProd({ [key]: undefined }) }, offline), key).toThrow(
        new RegExp(`stage prod must pin ${key} in cdk.json context.stages.prod`),
      );
      // An empty value is no pin either.
      expect(() => buildApp({ ...testContext, ...pinnedProd({ [key]: '' }) }, offline), key).toThrow(
        new RegExp(`must pin ${key}\\b`),
      );
    }
    // All of them at once, in one message, when prod's block is empty (as before pins).
    expect(() => buildApp({ ...testContext, stage: 'prod', stages: { dev: {}, prod: {} } }, offline)).toThrow(
      'stage prod must pin account, region, providers, modelDefaults, alarmEmail, domain, monthlyBudgetUsd',
    );
    // The command line cannot stand in for the repository.
    expect(() =>
      buildApp(
        { ...testContext, ...pinnedProd({ alarmEmail: undefined }), [contextKeys.alarmEmail]: 'ops@example.com' },
        offline,
      ),
    ).toThrow(/must pin alarmEmail/);
  });

  it('fails a prod synth whose -c changes a pinned value, and takes one that repeats it', () => {
    for (const [key, value] of [
      [contextKeys.providers, 'bedrock'],
      [contextKeys.alarmEmail, 'someone@example.com'],
      ['account', '222222222222'],
      ['monthlyBudgetUsd', '5000'],
      [contextKeys.modelDefaults, 'ImageGen=bedrock:amazon.nova-lite-v1:0'],
    ] as const) {
      expect(() => buildApp({ ...testContext, ...pinnedProd(), [key]: value }, offline), key).toThrow(
        new RegExp(`stage prod pins ${key} in cdk.json context.stages.prod; -c ${key}=.* would change it`),
      );
    }
    // The same value (the CLI passes text) is no change: an old pipeline that repeats it still works.
    const repeated = buildApp(
      {
        ...testContext,
        ...pinnedProd(),
        [contextKeys.providers]: pins.providers,
        monthlyBudgetUsd: String(pins.monthlyBudgetUsd),
        [contextKeys.modelDefaults]: JSON.stringify(pins.modelDefaults),
      },
      offline,
    );
    expect(repeated.config.monthlyBudgetUsd).toBe(500);
    // What prod does not pin, the command line still sets.
    expect(buildApp({ ...testContext, ...pinnedProd(), [contextKeys.tracing]: 'true' }, offline).config.tracing).toBe(
      true,
    );
  });

  it("fails when the shell's account is not the pinned one, and uses the pinned one offline", () => {
    expect(() =>
      buildApp(
        { ...testContext, ...pinnedProd() },
        { CDK_DEFAULT_ACCOUNT: '999999999999', CDK_DEFAULT_REGION: 'us-east-1' },
      ),
    ).toThrow(
      "the shell's credentials are for account 999999999999 (CDK_DEFAULT_ACCOUNT), but stage prod is pinned to account 111111111111",
    );
    // The right account: the pinned region wins over the profile's.
    const right = buildApp(
      { ...testContext, ...pinnedProd() },
      { CDK_DEFAULT_ACCOUNT: '111111111111', CDK_DEFAULT_REGION: 'us-east-1' },
    );
    expect(right.config.env).toEqual({ account: '111111111111', region: 'us-west-2' });
    const offlineProd = buildApp({ ...testContext, ...pinnedProd() }, offline);
    for (const stack of [offlineProd.stateful, offlineProd.api]) {
      expect(Stack.of(stack).environment).toBe('aws://111111111111/us-west-2');
    }
    // Malformed pins are named.
    expect(() => buildApp({ ...testContext, ...pinnedProd({ account: '1234' }) }, offline)).toThrow(
      /account must be a 12-digit AWS account id/,
    );
    expect(() => buildApp({ ...testContext, ...pinnedProd({ region: 'Ireland' }) }, offline)).toThrow(
      /region must be an AWS region/,
    );
  });

  it('synthesizes the pinned environment without looking anything up: the zones resolve at deploy time', () => {
    const { app } = buildApp({ ...testContext, ...pinnedProd() }, offline);
    const assembly = app.synth();
    // A context lookup (the zones of an environment-specific stack) would need the account's credentials.
    expect(assembly.manifest.missing ?? []).toEqual([]);
    const subnets = ofType(resourcesOf(buildApp({ ...testContext, ...pinnedProd() }, offline).api), 'AWS::EC2::Subnet');
    expect(subnets.map((s) => s.Properties.AvailabilityZone)).toEqual([
      { 'Fn::Select': [0, { 'Fn::GetAZs': '' }] },
      { 'Fn::Select': [1, { 'Fn::GetAZs': '' }] },
    ]);
  });

  it('keeps dev free of pins: environment-agnostic offline, -c overrides, the default budget', () => {
    const dev = buildApp({ ...testContext, stages: repositoryStages() }, offline);
    expect(Stack.of(dev.api).environment).toBe('aws://unknown-account/unknown-region');
    expect(dev.config.monthlyBudgetUsd).toBe(defaultMonthlyBudgetUsd);
    const pinnedDev = buildApp({ ...testContext, stages: { dev: { account: '333333333333' } } }, offline);
    expect(pinnedDev.config.env.account).toBe('333333333333');
    expect(() =>
      buildApp(
        { ...testContext, stages: { dev: { account: '333333333333' } } },
        { CDK_DEFAULT_ACCOUNT: '444444444444' },
      ),
    ).toThrow(/pinned to account 333333333333/);
  });

  it('keeps providers and alarm actions on a bare prod synth (cdk.json alone)', () => {
    const bare = buildApp({ ...testContext, stage: 'prod', stages: repositoryStages() }, offline);
    expect(bare.config.providers).toEqual([
      { provider: 'replicate', secretName: 'ssm:/workflow-run-api/prod/replicate' },
    ]);
    expect(bare.config.bedrockModels).toContain(bedrockDefaultModels.text);
    expect(bare.config.modelWarnings).toEqual([]);
    const resources = resourcesOf(bare.api);
    const executors = ofType(resources, 'AWS::Lambda::Function').filter((f) =>
      String(f.Properties.Description).startsWith('consumes the Steps queue'),
    );
    expect(executors).toHaveLength(1);
    expect(executors[0]?.Properties.Environment).toMatchObject({
      Variables: { PROVIDER_SECRETS: JSON.stringify({ replicate: 'ssm:/workflow-run-api/prod/replicate' }) },
    });
    const alarms = ofType(resources, 'AWS::CloudWatch::Alarm');
    expect(alarms.length).toBeGreaterThan(0);
    for (const alarm of alarms) {
      expect(alarm.Properties.AlarmActions, String(alarm.Properties.AlarmDescription)).toHaveLength(1);
    }
    Template.fromStack(bare.api).hasResourceProperties('AWS::SNS::Subscription', {
      Protocol: 'email',
      Endpoint: 'oncall@example.com',
    });
    const warnings = bare.api.node.metadata.filter((m) => m.type === 'aws:cdk:warning');
    expect(warnings).toEqual([]);
  });
});

describe('the models a stage pays for (paidModels)', { timeout: 120_000 }, () => {
  const configOf = (context: Record<string, unknown>) => stageConfig((key) => context[key], offline);
  const executorEnv = (app: ReturnType<typeof buildApp>) =>
    ofType(resourcesOf(app.api), 'AWS::Lambda::Function')
      .filter((f) => String(f.Properties.Description).startsWith('consumes the Steps queue'))
      .map((f) => (f.Properties.Environment as { Variables: Record<string, unknown> }).Variables[envNames.paidModels]);

  it('fails a prod synth whose list is open, from the command line or from its block', () => {
    expect(() => buildApp({ ...testContext, ...pinnedProd(), [contextKeys.paidModels]: 'open' }, offline)).toThrow(
      'context paidModels: prod may not leave its list of paid models open',
    );
    expect(() => configOf({ ...pinnedProd(), [contextKeys.paidModels]: 'open,replicate:acme/painter=250' })).toThrow(
      /prod may not leave its list of paid models open/,
    );
    expect(() => configOf(pinnedProd({ paidModels: { open: true, 'replicate:acme/painter': 250 } }))).toThrow(
      /prod may not leave its list of paid models open/,
    );
  });

  it("closes prod's list unless given and hands it to the functions; dev's stays open unless given", () => {
    const bare = buildApp({ ...testContext, ...pinnedProd() }, offline);
    expect(bare.config.paidModels).toEqual({ open: false, prices: {} });
    expect(executorEnv(bare)).toEqual(['{}']);
    const listed = configOf({
      ...pinnedProd(),
      [contextKeys.paidModels]: 'replicate:acme/painter=250,fal:fal-ai/x=x1.5',
    });
    expect(listed.paidModels).toEqual({
      open: false,
      prices: { 'replicate:acme/painter': { hundredths: 250 }, 'fal:fal-ai/x': { multiplier: 1.5 } },
    });
    expect(configOf({}).paidModels).toEqual({ open: true, prices: {} });
    expect(configOf({ [contextKeys.paidModels]: 'replicate:acme/painter' }).paidModels).toEqual({
      open: false,
      prices: { 'replicate:acme/painter': { multiplier: 1 } },
    });
    // Malformed entries and unknown providers fail the synth, naming the entry.
    for (const [value, error] of [
      ['replicate:acme/painter=2.5', /replicate:acme\/painter's price must be whole hundredths/],
      ['replicate:acme/painter=x0', /price must be/],
      ['acme/painter=250', /must be given as provider:model/],
      ['replicate:a/b=1,replicate:a/b=2', /replicate:a\/b is given twice/],
      ['nowhere:a/b=1', /names no provider the registry knows/],
    ] as const) {
      expect(() => configOf({ [contextKeys.paidModels]: value }), value).toThrow(error);
    }
  });
});

describe("the stage's budget", { timeout: 120_000 }, () => {
  it("is a monthly cost budget of the pinned amount, on the stage's cost allocation tag, mailing the alarm email", () => {
    const prod = buildApp({ ...testContext, ...pinnedProd() }, offline);
    const template = Template.fromStack(prod.api);
    template.resourceCountIs('AWS::Budgets::Budget', 1);
    template.hasResourceProperties('AWS::Budgets::Budget', {
      Budget: {
        BudgetName: 'WorkflowRunApi-prod-monthly',
        BudgetType: 'COST',
        TimeUnit: 'MONTHLY',
        BudgetLimit: { Amount: 500, Unit: 'USD' },
        CostFilters: { TagKeyValue: ['user:stage$prod'] },
      },
      NotificationsWithSubscribers: [
        {
          Notification: {
            NotificationType: 'ACTUAL',
            ComparisonOperator: 'GREATER_THAN',
            Threshold: 80,
            ThresholdType: 'PERCENTAGE',
          },
          Subscribers: [{ SubscriptionType: 'EMAIL', Address: 'oncall@example.com' }],
        },
        {
          Notification: {
            NotificationType: 'FORECASTED',
            ComparisonOperator: 'GREATER_THAN',
            Threshold: 100,
            ThresholdType: 'PERCENTAGE',
          },
          Subscribers: [{ SubscriptionType: 'EMAIL', Address: 'oncall@example.com' }],
        },
      ],
    });
    // The tag it filters on is the one every resource of the stage carries.
    Template.fromStack(prod.stateful).hasResourceProperties('AWS::DynamoDB::Table', {
      Tags: Match.arrayWith([{ Key: 'stage', Value: 'prod' }]),
    });
    expect(() => buildApp({ ...testContext, ...pinnedProd({ monthlyBudgetUsd: 12.5 }) }, offline)).toThrow(
      /monthlyBudgetUsd must be a whole number of US dollars/,
    );
  });

  it('is 25 dollars on dev unless pinned, mailing no one without an alarm email', () => {
    const dev = Template.fromStack(buildApp(testContext, offline).api);
    dev.hasResourceProperties('AWS::Budgets::Budget', {
      Budget: Match.objectLike({
        BudgetName: 'WorkflowRunApi-dev-monthly',
        BudgetLimit: { Amount: 25, Unit: 'USD' },
        CostFilters: { TagKeyValue: ['user:stage$dev'] },
      }),
      NotificationsWithSubscribers: [],
    });
    const own = Template.fromStack(
      buildApp(
        {
          ...testContext,
          stackPrefix: 'Trial',
          stages: { dev: { monthlyBudgetUsd: 40, alarmEmail: 'me@example.com' } },
        },
        offline,
      ).api,
    );
    own.hasResourceProperties('AWS::Budgets::Budget', {
      Budget: Match.objectLike({ BudgetName: 'Trial-dev-monthly', BudgetLimit: { Amount: 40, Unit: 'USD' } }),
      NotificationsWithSubscribers: Match.arrayWith([
        Match.objectLike({ Subscribers: [{ SubscriptionType: 'EMAIL', Address: 'me@example.com' }] }),
      ]),
    });
  });
});
