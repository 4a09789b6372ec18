/**
 * The PythonRunner's bounds on the synthesized templates: a reserved concurrency per stage (its
 * default the most PythonSandbox steps the step executor runs at once, or `-c
 * pythonRunnerReservedConcurrency`), and its isolated subnets in the availability zones `-c
 * pythonRunnerAzs` names, checked at synth; without it, the region's first two as before.
 */
import type { Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../lib/build-app.ts';
import { contextKeys, stageDefaults } from '../lib/stages.ts';
import { stepsQueue } from '../platform/definitions.ts';
import { pinnedProd, synthOnly } from './support/stages.ts';

type Resources = Record<string, { Type: string; Properties: Record<string, unknown> }>;
const resourcesOf = (stack: Stack) => Template.fromStack(stack).toJSON().Resources as Resources;
const ofType = (stack: Stack, type: string) => Object.values(resourcesOf(stack)).filter((r) => r.Type === type);

/** The PythonRunner function: the one in a VPC. */
const runnerOf = (stack: Stack) => {
  const inVpc = ofType(stack, 'AWS::Lambda::Function').filter((f) => f.Properties.VpcConfig !== undefined);
  expect(inVpc).toHaveLength(1);
  return inVpc[0]?.Properties ?? {};
};
const zonesOf = (stack: Stack) => ofType(stack, 'AWS::EC2::Subnet').map((s) => s.Properties.AvailabilityZone);

const prod = (context: Record<string, unknown> = {}) => buildApp({ ...synthOnly, ...pinnedProd(), ...context }, {}).api;
const dev = (context: Record<string, unknown> = {}) => buildApp({ ...synthOnly, ...context }, {}).api;

describe('the PythonRunner', { timeout: 120_000 }, () => {
  it('has a reserved concurrency per stage: the most Python steps the step executor runs at once', () => {
    expect(runnerOf(prod()).ReservedConcurrentExecutions).toBe(
      stageDefaults.prod.consumerMaxConcurrency.Steps * stepsQueue.batchSize,
    );
    expect(runnerOf(prod()).ReservedConcurrentExecutions).toBe(100);
    expect(runnerOf(dev()).ReservedConcurrentExecutions).toBe(20);
    expect(runnerOf(prod({ [contextKeys.pythonRunnerReservedConcurrency]: '40' })).ReservedConcurrentExecutions).toBe(
      40,
    );
    expect(() => dev({ [contextKeys.pythonRunnerReservedConcurrency]: '0' })).toThrow(
      /pythonRunnerReservedConcurrency must be a whole number/,
    );
  });

  it("keeps its subnets in the region's first two zones unless told, and pins the named zones", () => {
    const agnostic = [{ 'Fn::Select': [0, { 'Fn::GetAZs': '' }] }, { 'Fn::Select': [1, { 'Fn::GetAZs': '' }] }];
    expect(zonesOf(prod())).toEqual(agnostic);
    expect(zonesOf(dev())).toEqual(agnostic);
    const pinned = prod({ [contextKeys.pythonRunnerAzs]: 'us-west-2b,us-west-2d' });
    expect(zonesOf(pinned)).toEqual(['us-west-2b', 'us-west-2d']);
    // The function's VPC configuration takes exactly those subnets.
    const subnetIds = (runnerOf(pinned).VpcConfig as { SubnetIds: unknown[] }).SubnetIds;
    expect(subnetIds).toHaveLength(2);
    expect(zonesOf(dev({ [contextKeys.pythonRunnerAzs]: 'eu-west-1a' }))).toEqual(['eu-west-1a']);
  });

  it('fails the synth on zones that are not distinct zone names of the pinned region', () => {
    for (const bad of ['us-east-1a', 'usw2-az1', 'us-west-2a,us-west-2a', ' , ', 'us-west-2']) {
      expect(() => prod({ [contextKeys.pythonRunnerAzs]: bad }), bad).toThrow(
        /pythonRunnerAzs must be distinct availability zone names of us-west-2/,
      );
    }
  });
});
