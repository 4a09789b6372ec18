/**
 * A run's trail in the synthesized stage (item 5): every function's log group named as the
 * operators' CLI names it, and the saved Logs Insights queries over all of them.
 */
import './support/test-providers.ts';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../lib/build-app.ts';
import { pythonRunner, workers } from '../lib/workers.ts';
import {
  failedRunsByReasonQuery,
  functionLogGroupName,
  jobIdPlaceholder,
  renderQuery,
  runTrailQuery,
  savedQueryNames,
} from '../platform/log-queries.ts';
import { routes } from '../platform/routes.ts';
import { pinnedProd } from './support/stages.ts';

/** No bundling (fast), and validation failures thrown with the whole report in the message. */
const testContext = { 'aws:cdk:bundling-stacks': [], '@aws-cdk/core:appMode': 'inmemory' };
const functionIds = [...routes.map((r) => r.id), ...workers.map((w) => w.id), pythonRunner.id];

type Resource = { Type: string; Properties: Record<string, unknown>; DependsOn?: string[] };

const synthesize = (context: Record<string, unknown>) => {
  const built = buildApp({ ...testContext, ...context }, {});
  const template = Template.fromStack(built.api);
  const resources = template.toJSON().Resources as Record<string, Resource>;
  return { stackName: built.api.stackName, template, resources };
};

describe.each([
  ['dev', {}],
  ['prod', pinnedProd()],
])('the %s stage', (_stage, context) => {
  const { stackName, resources } = synthesize(context);
  const ofType = (type: string) => Object.entries(resources).filter(([, r]) => r.Type === type);
  const queries = Object.fromEntries(
    ofType('AWS::Logs::QueryDefinition').map(([id, r]) => [r.Properties.Name as string, { id, ...r }]),
  );
  const names = savedQueryNames(stackName);

  it("names every function's log group /<api stack>/<function id>, and each function logs to its own", () => {
    const functionLogGroups = ofType('AWS::Logs::LogGroup')
      .map(([, r]) => r.Properties.LogGroupName)
      .filter((name) => name !== undefined);
    expect(functionLogGroups.sort()).toEqual(functionIds.map((id) => functionLogGroupName(stackName, id)).sort());
    const logsTo = ofType('AWS::Lambda::Function').flatMap(([id, fn]) => {
      const logGroup = (fn.Properties.LoggingConfig as { LogGroup?: { Ref?: string } } | undefined)?.LogGroup?.Ref;
      return logGroup ? [[id, logGroup] as const] : []; // CDK's own helper functions log the default way
    });
    expect(logsTo).toHaveLength(functionIds.length);
    for (const [id, logGroup] of logsTo) {
      // A ServiceFunction's function and log group share its construct id's prefix.
      const functionId = functionIds.find((f) => id.startsWith(`${f}Function`));
      expect(resources[logGroup]?.Properties.LogGroupName, id).toBe(functionLogGroupName(stackName, functionId ?? id));
    }
  });

  it("saves a run's trail over every function's log group, filtered by one jobId, oldest first", () => {
    const trail = queries[names.runTrail];
    expect(trail).toBeDefined();
    expect(trail?.Properties.QueryString).toBe(renderQuery(runTrailQuery(jobIdPlaceholder)));
    expect(trail?.Properties.QueryString).toBe(
      [
        'fields @timestamp, @log, level, message, nodeId, function_request_id, error',
        `filter jobId = "${jobIdPlaceholder}"`,
        'sort @timestamp asc',
        'limit 10000',
      ].join('\n| '),
    );
    expect([...((trail?.Properties.LogGroupNames as string[] | undefined) ?? [])].sort()).toEqual(
      functionIds.map((id) => functionLogGroupName(stackName, id)).sort(),
    );
    // Created once the functions (and so their log groups) exist.
    const functions = ofType('AWS::Lambda::Function').map(([id]) => id);
    expect(trail?.DependsOn ?? []).toEqual(
      expect.arrayContaining(functions.filter((id) => !id.startsWith('LogRetention'))),
    );
  });

  it('saves the failed runs counted by reason, over the same log groups', () => {
    const failed = queries[names.failedRunsByReason];
    expect(failed?.Properties.QueryString).toBe(renderQuery(failedRunsByReasonQuery));
    expect(failed?.Properties.QueryString).toBe(
      [
        'filter message = "run failed"',
        'stats count(*) as failedRuns, latest(jobId) as lastJobId by reason',
        'sort failedRuns desc',
      ].join('\n| '),
    );
    expect(failed?.Properties.LogGroupNames).toEqual(queries[names.runTrail]?.Properties.LogGroupNames);
    expect(Object.keys(queries)).toHaveLength(2);
  });
});
