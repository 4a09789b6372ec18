/**
 * Safe deploys and restores on the synthesized templates (lib/safe-deploys.ts, lib/backups.ts,
 * lib/deploy-settings.ts): the `live` aliases of the run-start routes and the step executor, their
 * CodeDeploy deployment groups with their rollback alarms, what API Gateway and the Steps queue invoke,
 * a stage run on an existing (restored) table, and the AWS Backup plan.
 */
import './support/test-providers.ts';
import fs from 'node:fs';
import path from 'node:path';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { backupRules } from '../lib/backups.ts';
import { buildApp } from '../lib/build-app.ts';
import { aliasedFunctions, liveAlias, rollbackAlarm } from '../lib/safe-deploys.ts';
import { contextKeys } from '../lib/stages.ts';
import { readAssembly } from '../local/rehearse/assembly.ts';
import { dataTable, envNames } from '../platform/definitions.ts';
import { answeredFailures, metricsNamespace } from '../platform/metric-names.ts';
import { routeById } from '../platform/routes.ts';
import { prodTestContext, synthOnly } from './support/stages.ts';

const testContext = synthOnly;
const prodContext = { ...prodTestContext() };
const restored = {
  name: 'WorkflowRunApi-prod-restored-20261127',
  streamArn:
    'arn:aws:dynamodb:us-east-1:111111111111:table/WorkflowRunApi-prod-restored-20261127/stream/2026-11-27T10:00:00.000',
};

type Resource = {
  Type: string;
  Properties: Record<string, unknown>;
  DependsOn?: string[];
  UpdatePolicy?: Record<string, unknown>;
  DeletionPolicy?: string;
  UpdateReplacePolicy?: string;
  Metadata?: Record<string, unknown>;
};

const synthesize = (context: Record<string, unknown>) => {
  const built = buildApp(context, {});
  const api = Template.fromStack(built.api).toJSON().Resources as Record<string, Resource>;
  const stateful = Template.fromStack(built.stateful).toJSON().Resources as Record<string, Resource>;
  return { ...built, api, stateful };
};

const ofType = (resources: Record<string, Resource>, type: string) =>
  Object.entries(resources).filter(([, r]) => r.Type === type);

/** The logical id of the function (or worker) `id` (`<id>Function<hash>`: ServiceFunction's `Function`). */
const functionIdOf = (resources: Record<string, Resource>, id: string) => {
  const found = ofType(resources, 'AWS::Lambda::Function').find(([logicalId]) =>
    new RegExp(`^${id}Function[0-9A-F]{8}$`).test(logicalId),
  );
  if (!found) throw new Error(`no function ${id}`);
  return found[0];
};

/** The alias of the function `id`. */
const aliasOf = (resources: Record<string, Resource>, id: string) => {
  const fnId = functionIdOf(resources, id);
  const found = ofType(resources, 'AWS::Lambda::Alias').find(
    ([, r]) => (r.Properties.FunctionName as { Ref?: string }).Ref === fnId,
  );
  if (!found) throw new Error(`no alias of ${id}`);
  return { fnId, aliasId: found[0], alias: found[1] };
};

/** The API Gateway integration of a route. */
const integrationOf = (resources: Record<string, Resource>, routeId: string) => {
  const found = ofType(resources, 'AWS::ApiGatewayV2::Integration').find(([id]) =>
    id.includes(`${routeId}Integration`),
  );
  if (!found) throw new Error(`no integration of ${routeId}`);
  return found[1];
};

/** Logical ids anything in `value` references. */
const refs = (value: unknown): string[] => {
  if (Array.isArray(value)) return value.flatMap(refs);
  if (typeof value !== 'object' || value === null) return [];
  const record = value as Record<string, unknown>;
  if (typeof record.Ref === 'string') return [record.Ref];
  const getAtt = record['Fn::GetAtt'];
  if (Array.isArray(getAtt) && typeof getAtt[0] === 'string') return [getAtt[0]];
  return Object.values(record).flatMap(refs);
};

describe('safe deploys', { timeout: 120_000 }, () => {
  const prod = synthesize(prodContext);
  const dev = synthesize(testContext);

  it('gives the run-start routes and the step executor a live alias on their current version, nothing else', () => {
    for (const stage of [prod, dev]) {
      const aliases = ofType(stage.api, 'AWS::Lambda::Alias');
      expect(aliases).toHaveLength(aliasedFunctions.length);
      for (const id of aliasedFunctions) {
        const { alias, fnId } = aliasOf(stage.api, id);
        expect(alias.Properties.Name).toBe(liveAlias);
        const [versionId] = refs(alias.Properties.FunctionVersion);
        const version = stage.api[versionId ?? ''];
        expect(version?.Type).toBe('AWS::Lambda::Version');
        expect(version?.Properties.FunctionName).toEqual({ Ref: fnId });
        // Deleted once the update that replaced it is done, so versions do not pile up.
        expect(version?.DeletionPolicy).toBe('Delete');
      }
    }
    expect(aliasedFunctions).toEqual(['RunWorkflow', 'RunAgent', 'StepExecutor']);
    expect(routeById('RunWorkflow').path).toBe('/workflows/{id}/runs');
    expect(routeById('RunAgent').path).toBe('/agents/{id}/runs');
  });

  it('on prod, shifts each alias by a CodeDeploy canary that rolls back on failure, on stop and on either alarm: errors, and 5xx answers or failed records, of the new version', () => {
    const groups = ofType(prod.api, 'AWS::CodeDeploy::DeploymentGroup');
    expect(groups).toHaveLength(aliasedFunctions.length);
    for (const id of aliasedFunctions) {
      const { alias, aliasId, fnId } = aliasOf(prod.api, id);
      const update = alias.UpdatePolicy?.CodeDeployLambdaAliasUpdate as { DeploymentGroupName: { Ref: string } };
      const group = prod.api[update.DeploymentGroupName.Ref];
      expect(group?.Properties).toMatchObject({
        DeploymentConfigName: 'CodeDeployDefault.LambdaCanary10Percent5Minutes',
        DeploymentStyle: { DeploymentOption: 'WITH_TRAFFIC_CONTROL', DeploymentType: 'BLUE_GREEN' },
        AutoRollbackConfiguration: {
          Enabled: true,
          Events: ['DEPLOYMENT_FAILURE', 'DEPLOYMENT_STOP_ON_REQUEST', 'DEPLOYMENT_STOP_ON_ALARM'],
        },
        AlarmConfiguration: { Enabled: true },
      });
      const alarmIds = (
        (group?.Properties.AlarmConfiguration as { Alarms: { Name: { Ref: string } }[] } | undefined)?.Alarms ?? []
      ).map((a) => a.Name.Ref);
      expect(alarmIds).toHaveLength(2);
      const dimensionsOf = (alarmId: string) =>
        Object.fromEntries(
          ((prod.api[alarmId]?.Properties.Dimensions ?? []) as { Name: string; Value: unknown }[]).map((d) => [
            d.Name,
            d.Value,
          ]),
        );
      const window = {
        Statistic: 'Sum',
        Period: rollbackAlarm.periodSeconds,
        Threshold: rollbackAlarm.threshold,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        EvaluationPeriods: 5,
        DatapointsToAlarm: 2,
        TreatMissingData: 'notBreaching',
      };
      // Errors of the version being deployed, through the alias: the old version's share cannot trip it.
      const errorsId = alarmIds.find((a) => prod.api[a]?.Properties.MetricName === 'Errors') ?? '';
      expect(prod.api[errorsId]?.Properties).toMatchObject({
        Namespace: 'AWS/Lambda',
        MetricName: 'Errors',
        ...window,
      });
      expect(dimensionsOf(errorsId)).toEqual({
        FunctionName: { Ref: fnId },
        Resource: { 'Fn::Join': ['', [{ Ref: fnId }, `:${liveAlias}`]] },
        ExecutedVersion: alias.Properties.FunctionVersion,
      });
      // And what Lambda counts as a success: the 5xx it answered and the records it handed back,
      // counted by the new code under the version the alias moves to (the same Version resource).
      const failuresId = alarmIds.find((a) => prod.api[a]?.Properties.MetricName === answeredFailures) ?? '';
      expect(failuresId).toMatch(new RegExp(`^SafeDeploys${id}NewVersionFailuresAlarm`));
      expect(prod.api[failuresId]?.Properties).toMatchObject({ Namespace: metricsNamespace, ...window });
      expect(dimensionsOf(failuresId)).toEqual({
        functionName: { Ref: fnId },
        functionVersion: alias.Properties.FunctionVersion,
      });
      expect(alias.Properties.FunctionVersion).toEqual({ 'Fn::GetAtt': [expect.any(String), 'Version'] });
      // The alarms watch the new version before the alias starts moving to it.
      for (const alarmId of alarmIds) expect(prod.api[aliasId]?.DependsOn).toContain(alarmId);
    }
  });

  it('on dev, moves the aliases at once: no CodeDeploy, no rollback alarm; -c deployment=linear shifts 10% a minute', () => {
    expect(ofType(dev.api, 'AWS::CodeDeploy::DeploymentGroup')).toEqual([]);
    expect(ofType(dev.api, 'AWS::Lambda::Alias').every(([, r]) => r.UpdatePolicy === undefined)).toBe(true);
    expect(
      ofType(dev.api, 'AWS::CloudWatch::Alarm').filter(
        ([, r]) =>
          (r.Properties.MetricName === 'Errors' &&
            (r.Properties.Dimensions as { Name: string }[] | undefined)?.some((d) => d.Name === 'ExecutedVersion')) ||
          r.Properties.MetricName === answeredFailures,
      ),
    ).toEqual([]);
    const linear = synthesize({ ...testContext, [contextKeys.deployment]: 'linear' });
    const configs = ofType(linear.api, 'AWS::CodeDeploy::DeploymentGroup').map(
      ([, r]) => r.Properties.DeploymentConfigName,
    );
    expect(configs).toEqual(aliasedFunctions.map(() => 'CodeDeployDefault.LambdaLinear10PercentEvery1Minute'));
    expect(() => synthesize({ ...testContext, [contextKeys.deployment]: 'blue-green' })).toThrow(/deployment must be/);
  });

  it('points API Gateway (integration and invoke permission) and the Steps queue at the alias, every other function at itself', () => {
    for (const stage of [prod, dev]) {
      for (const routeId of ['RunWorkflow', 'RunAgent']) {
        const { aliasId } = aliasOf(stage.api, routeId);
        expect(integrationOf(stage.api, routeId).Properties.IntegrationUri).toEqual({ Ref: aliasId });
        const permissions = ofType(stage.api, 'AWS::Lambda::Permission').filter(([id]) =>
          id.includes(`${routeId}IntegrationPermission`),
        );
        expect(permissions.map(([, r]) => r.Properties.FunctionName)).toEqual([{ Ref: aliasId }]);
      }
      expect(integrationOf(stage.api, 'GetRun').Properties.IntegrationUri).toEqual({
        'Fn::GetAtt': [functionIdOf(stage.api, 'GetRun'), 'Arn'],
      });
      const { aliasId, fnId } = aliasOf(stage.api, 'StepExecutor');
      const mappings = ofType(stage.api, 'AWS::Lambda::EventSourceMapping');
      const onSteps = mappings.filter(([, r]) =>
        refs(r.Properties.EventSourceArn).some((id) => id.startsWith('StepsQueue')),
      );
      expect(onSteps).toHaveLength(1);
      expect(refs(onSteps[0]?.[1].Properties.FunctionName)).toEqual([aliasId]);
      // No second mapping invokes $LATEST beside it.
      expect(mappings.filter(([, r]) => refs(r.Properties.FunctionName).includes(fnId))).toEqual([]);
    }
  });

  it('is what the rehearsal and the local stack read: an aliased route or mapping resolves to its function', () => {
    for (const context of [prodContext, testContext]) {
      const built = buildApp(context, {});
      const assembly = readAssembly(built.app.synth().directory);
      const api = Template.fromStack(built.api).toJSON().Resources as Record<string, Resource>;
      const route = assembly.routes.find((r) => r.routeKey === `POST /api/v1${routeById('RunWorkflow').path}`);
      expect(route?.functionLogicalId).toBe(functionIdOf(api, 'RunWorkflow'));
      const agent = assembly.routes.find((r) => r.routeKey === `POST /api/v1${routeById('RunAgent').path}`);
      expect(agent?.functionLogicalId).toBe(functionIdOf(api, 'RunAgent'));
      const steps = assembly.queueMappings.find((m) => m.queueLogicalId.startsWith('StepsQueue'));
      expect(steps?.functionLogicalId).toBe(functionIdOf(api, 'StepExecutor'));
    }
  });
});

describe('a stage on an existing (restored) table', { timeout: 120_000 }, () => {
  const context = {
    ...prodContext,
    [contextKeys.tableName]: restored.name,
    [contextKeys.tableStreamArn]: restored.streamArn,
  };
  const built = synthesize(context);

  it('creates no table, and every function, grant and the stream mapping use the named one', () => {
    expect(ofType(built.stateful, 'AWS::DynamoDB::Table')).toEqual([]);
    const functions = ofType(built.api, 'AWS::Lambda::Function').filter(
      ([, r]) =>
        (r.Properties.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables?.[envNames.table],
    );
    expect(functions.length).toBeGreaterThan(10);
    for (const [, fn] of functions) {
      expect((fn.Properties.Environment as { Variables: Record<string, unknown> }).Variables[envNames.table]).toBe(
        restored.name,
      );
    }
    const streamMapping = ofType(built.api, 'AWS::Lambda::EventSourceMapping').find(
      ([, r]) => r.Properties.StartingPosition !== undefined,
    );
    expect(streamMapping?.[1].Properties.EventSourceArn).toBe(restored.streamArn);
    const policies = JSON.stringify(ofType(built.api, 'AWS::IAM::Policy').map(([, r]) => r.Properties.PolicyDocument));
    expect(policies).toContain(`:table/${restored.name}`);
    expect(policies).toContain(`:table/${restored.name}/index/${dataTable.indexes[0]?.name}`);
    // Nothing of the stateful stack's own table is imported (the bucket still is).
    expect(policies).not.toMatch(/ExportsOutput\w*Data/);
  });

  it('backs the named table up, and refuses a name without its stream or with another table’s', () => {
    const selection = ofType(built.stateful, 'AWS::Backup::BackupSelection')[0]?.[1];
    expect(JSON.stringify(selection?.Properties)).toContain(`:table/${restored.name}`);
    const { tableStreamArn: _, ...noStream } = context;
    expect(() => buildApp(noStream, {})).toThrow(/tableName needs tableStreamArn/);
    expect(() =>
      buildApp({ ...context, [contextKeys.tableStreamArn]: restored.streamArn.replace('restored', 'other') }, {}),
    ).toThrow(/tableName needs tableStreamArn/);
    expect(() => buildApp({ ...prodContext, [contextKeys.tableStreamArn]: restored.streamArn }, {})).toThrow(
      /without tableName/,
    );
    expect(() => buildApp({ ...prodContext, [contextKeys.tableName]: 'no spaces' }, {})).toThrow(/table name/);
  });

  it('passes the cdk-nag AWS Solutions checks', () => {
    expectNagClean(built.app);
  });
});

describe('AWS Backup', { timeout: 120_000 }, () => {
  const prod = synthesize(prodContext);
  const dev = synthesize(testContext);

  it('on prod, backs the table up daily (kept a week) and monthly (kept a year) into a vault kept past a teardown', () => {
    const vaults = ofType(prod.stateful, 'AWS::Backup::BackupVault');
    expect(vaults).toHaveLength(1);
    // Kept when the stack is deleted, deleted (still empty) when its creation rolls back: its name is fixed.
    expect(vaults[0]?.[1].DeletionPolicy).toBe('RetainExceptOnCreate');
    expect(vaults[0]?.[1].UpdateReplacePolicy).toBe('Retain');
    const plan = ofType(prod.stateful, 'AWS::Backup::BackupPlan')[0]?.[1].Properties.BackupPlan as {
      BackupPlanRule: { RuleName: string; ScheduleExpression: string; Lifecycle: { DeleteAfterDays: number } }[];
    };
    expect(plan.BackupPlanRule.map((r) => [r.RuleName, r.ScheduleExpression, r.Lifecycle.DeleteAfterDays])).toEqual([
      ['Daily', `cron(0 ${backupRules.daily.hourUtc} * * ? *)`, 7],
      ['Monthly', `cron(0 ${backupRules.monthly.hourUtc} 1 * ? *)`, 365],
    ]);
    const selection = ofType(prod.stateful, 'AWS::Backup::BackupSelection')[0]?.[1].Properties.BackupSelection as {
      Resources: unknown[];
    };
    const tableId = ofType(prod.stateful, 'AWS::DynamoDB::Table')[0]?.[0];
    expect(refs(selection.Resources)).toEqual([tableId]);
    // The bucket is not backed up (versioning would keep every expired output: docs/deploy.md).
    expect(JSON.stringify(selection.Resources)).not.toContain('Library');
  });

  it('on dev, none unless asked (-c backups=true), and prod can turn it off (-c backups=false)', () => {
    expect(ofType(dev.stateful, 'AWS::Backup::BackupPlan')).toEqual([]);
    const asked = synthesize({ ...testContext, [contextKeys.backups]: 'true' });
    expect(ofType(asked.stateful, 'AWS::Backup::BackupPlan')).toHaveLength(1);
    const off = synthesize({ ...prodContext, [contextKeys.backups]: 'false' });
    expect(ofType(off.stateful, 'AWS::Backup::BackupPlan')).toEqual([]);
    expect(() => synthesize({ ...prodContext, [contextKeys.backups]: 'daily' })).toThrow(/backups must be/);
  });

  it('passes the cdk-nag AWS Solutions checks on prod and on dev, canary and linear', () => {
    expectNagClean(prod.app);
    expectNagClean(synthesize({ ...testContext, [contextKeys.deployment]: 'linear' }).app);
  });
});

/** Passes the cdk-nag AWS Solutions checks: the validation report lists no finding. */
function expectNagClean(app: ReturnType<typeof buildApp>['app']) {
  const assembly = app.synth();
  const report = JSON.parse(fs.readFileSync(path.join(assembly.directory, 'validation-report.json'), 'utf8')) as {
    pluginReports: { pluginName: string; conclusion: string; violations: unknown[] }[];
  };
  expect(report.pluginReports.filter((r) => r.conclusion !== 'success' || r.violations.length > 0)).toEqual([]);
}
