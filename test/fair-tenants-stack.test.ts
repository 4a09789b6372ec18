/**
 * The per-team cap on steps in flight, per stage, on the synthesized templates (docs/deploy.md's
 * stage settings; docs/operations.md, "Fair tenants"): every function of the stage is told it, so
 * the step executor applies it; `-c teamStepsInFlight=N` overrides the stage's default.
 */
import './support/test-providers.ts';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { parseTeamStepsInFlight } from '../functions/domain/team-steps.ts';
import { buildApp } from '../lib/build-app.ts';
import { contextKeys, stageDefaults } from '../lib/stages.ts';
import { workers } from '../lib/workers.ts';
import { envNames } from '../platform/definitions.ts';

const testContext = { 'aws:cdk:bundling-stacks': [], '@aws-cdk/core:appMode': 'inmemory' };
const offline: NodeJS.ProcessEnv = {};

/** The step executor's `TEAM_STEPS_IN_FLIGHT` in the stage's API stack. */
const stepExecutorCap = (context: Record<string, unknown>) => {
  const { api } = buildApp({ ...testContext, ...context }, offline);
  const executor = workers.find((w) => w.trigger.kind === 'queue' && w.trigger.queue === 'Steps');
  const functions = Object.entries(Template.fromStack(api).findResources('AWS::Lambda::Function'));
  const [, fn] = functions.find(([id]) => executor !== undefined && id.startsWith(executor.id)) ?? [];
  const variables = (fn?.Properties.Environment?.Variables ?? {}) as Record<string, string>;
  return variables[envNames.teamStepsInFlight];
};

describe('the per-team cap on steps in flight, per stage', () => {
  it('is a share of the step executor’s steps at once: dev 10 of 20, prod 40 of 100', () => {
    expect(stageDefaults.dev.teamStepsInFlight).toBe(10);
    expect(stageDefaults.prod.teamStepsInFlight).toBe(40);
    for (const stage of ['dev', 'prod'] as const) {
      const atOnce = stageDefaults[stage].consumerMaxConcurrency.Steps * 10;
      expect(stageDefaults[stage].teamStepsInFlight).toBeLessThan(atOnce);
    }
  });

  it('reaches the step executor, which reads it as the stage set it', () => {
    const dev = stepExecutorCap({});
    expect(dev).toBe('10');
    expect(parseTeamStepsInFlight(dev)).toBe(10);
    expect(stepExecutorCap({ [contextKeys.teamStepsInFlight]: '3' })).toBe('3');
  });

  it('refuses a cap that is not a whole number of steps from 1', () => {
    for (const bad of ['0', '-2', '1.5', 'many']) {
      expect(() => buildApp({ ...testContext, [contextKeys.teamStepsInFlight]: bad }, offline)).toThrow(
        /teamStepsInFlight/,
      );
    }
  });
});
