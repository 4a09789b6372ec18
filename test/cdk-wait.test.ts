/**
 * The routes that wait for their run (`Prefer: wait`) on the synthesized template: their functions
 * get the waiting timeout, under the HTTP API integration's, and the Run's stream address; every
 * other route keeps 10 s.
 */
import './support/test-providers.ts';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../lib/build-app.ts';
import { envNames } from '../platform/definitions.ts';
import { basePath, httpApiRoutes } from '../platform/routes.ts';
import { maxWaitSeconds, waitingFunctionTimeoutSeconds, waitMarginMs } from '../platform/run-wait.ts';
import { synthOnly } from './support/stages.ts';

// biome-ignore lint/suspicious/noExplicitAny: template JSON has no static type
type Json = Record<string, any>;

describe('the routes that wait', () => {
  const template = Template.fromStack(buildApp({ ...synthOnly }, {}).api);
  const functions = Object.values(template.findResources('AWS::Lambda::Function')) as Json[];
  const integrations = Object.values(template.findResources('AWS::ApiGatewayV2::Integration')) as Json[];

  it('give the five waiting routes’ functions the waiting timeout and the stream’s address; the others 10 s', () => {
    const waiting = httpApiRoutes.filter((route) => route.waits).map((route) => route.id);
    // Mcp: a tool call waits for the run it starts.
    expect(waiting.sort()).toEqual(['GetRun', 'Mcp', 'ResumeRun', 'RunAgent', 'RunWorkflow']);
    for (const route of httpApiRoutes) {
      const fn = functions.find((f) => f.Properties.Description === `${route.method} ${basePath}${route.path}`);
      expect(fn, route.id).toBeDefined();
      expect(fn?.Properties.Timeout, route.id).toBe(route.waits ? waitingFunctionTimeoutSeconds : 10);
      const variables = fn?.Properties.Environment.Variables ?? {};
      // A run token's answer links the run's stream too, so CreateRunToken also knows its address.
      expect(variables[envNames.runEventsBaseUrl] !== undefined, route.id).toBe(
        route.waits === true || route.id === 'CreateRunToken',
      );
    }
  });

  it('end the longest wait, with its margin, within the function’s timeout, and the function within the integration’s', () => {
    expect(maxWaitSeconds * 1000 + waitMarginMs).toBeLessThanOrEqual(waitingFunctionTimeoutSeconds * 1000);
    expect(integrations.length).toBeGreaterThanOrEqual(httpApiRoutes.length);
    for (const integration of integrations) {
      // Unset, an HTTP API integration waits 30 s, its default and its most.
      const timeoutMs = integration.Properties.TimeoutInMillis ?? 30_000;
      expect(timeoutMs).toBeGreaterThan(waitingFunctionTimeoutSeconds * 1000);
    }
  });
});
