/**
 * The run event stream on the synthesized templates: its function on a function URL in
 * RESPONSE_STREAM mode (AuthType NONE: the function checks the key), its timeout past the cap, the
 * stack's outputs, GetRun's RUN_EVENTS_BASE_URL (the Run's `links.events`), no HTTP API route for
 * it, and the edge's behaviour to it when the edge serves it; cdk-nag clean on dev and prod.
 */
import './support/test-providers.ts';
import fs from 'node:fs';
import path from 'node:path';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../lib/build-app.ts';
import { edgeContextKeys, parseEventsOrigin } from '../lib/edge-config.ts';
import { runEventsPath } from '../lib/edge-stack.ts';
import { originSecretName } from '../lib/origin-secret.ts';
import { contextKeys, stackNames } from '../lib/stages.ts';
import { envNames } from '../platform/definitions.ts';
import { originHeader } from '../platform/edge.ts';
import { basePath, httpApiRoutes, routeById, streamRoutes } from '../platform/routes.ts';
import { streamCapSeconds, streamFunctionMemoryMb, streamFunctionTimeoutSeconds } from '../platform/run-stream.ts';
import { pinnedProd, synthOnly } from './support/stages.ts';

// biome-ignore lint/suspicious/noExplicitAny: template JSON has no static type
type Json = Record<string, any>;

const domain = { name: 'api.example.com', hostedZoneId: 'Z0123456789EXAMPLE', hostedZoneName: 'example.com' };
const originHost = 'abcdefghijklmnopqrstuvwxyz234567.lambda-url.eu-west-1.on.aws';
const managed = {
  cachingDisabled: '4135ea2d-6df8-44a3-9df3-4b5a84be39ad',
  allViewerExceptHostHeader: 'b689b0a8-53d0-40ab-baf2-68738e2966ac',
};

const build = (context: Record<string, unknown>) => {
  const built = buildApp({ ...synthOnly, ...context }, {});
  const assembly = built.app.synth();
  const report = JSON.parse(fs.readFileSync(path.join(assembly.directory, 'validation-report.json'), 'utf8')) as {
    pluginReports: { conclusion: string; violations: unknown[] }[];
  };
  return {
    ...built,
    nagFindings: report.pluginReports.filter((r) => r.conclusion !== 'success' || r.violations.length > 0),
    api: Template.fromStack(built.api),
    edge: built.edge ? Template.fromStack(built.edge) : undefined,
  };
};

const prod = (pins: Record<string, unknown> = {}) =>
  build(pinnedProd({ [contextKeys.providers]: 'bedrock', [contextKeys.alarmEmail]: 'ops@example.com', ...pins }));

/** The function whose description names the route. */
const streamFunction = (template: Template): [string, Json] => {
  const route = routeById('GetRunEvents');
  const found = Object.entries(template.findResources('AWS::Lambda::Function')).filter(([, r]) =>
    String((r as Json).Properties.Description).startsWith(`${route.method} ${basePath}${route.path}`),
  );
  expect(found).toHaveLength(1);
  return found[0] as [string, Json];
};

const getRunEnvironment = (template: Template, id: 'GetRun' | 'CreateRunToken' = 'GetRun'): Json => {
  const route = routeById(id);
  const found = Object.values(template.findResources('AWS::Lambda::Function')).filter(
    (r) => (r as Json).Properties.Description === `${route.method} ${basePath}${route.path}`,
  );
  expect(found).toHaveLength(1);
  return (found[0] as Json).Properties.Environment.Variables;
};

describe('the run event stream in the stack', () => {
  const dev = build({});

  it('is one route of the table, streamed, and no HTTP API route', () => {
    expect(streamRoutes.map((r) => r.id)).toEqual(['GetRunEvents']);
    expect(httpApiRoutes.some((r) => r.id === 'GetRunEvents')).toBe(false);
    const routeKeys = Object.values(dev.api.findResources('AWS::ApiGatewayV2::Route')).map(
      (r) => (r as Json).Properties.RouteKey,
    );
    // Each route's, and the CORS preflight of each route that accepts a run token.
    expect(routeKeys).toHaveLength(httpApiRoutes.length + httpApiRoutes.filter((r) => r.runToken).length);
    expect(routeKeys.some((key: string) => key.endsWith('/events'))).toBe(false);
  });

  it('answers on a function URL in RESPONSE_STREAM mode, AuthType NONE, public invoke only through the URL', () => {
    const [logicalId, fn] = streamFunction(dev.api);
    expect(fn.Properties.Timeout).toBe(streamFunctionTimeoutSeconds);
    expect(fn.Properties.Timeout).toBeGreaterThan(streamCapSeconds);
    expect(fn.Properties.MemorySize).toBe(streamFunctionMemoryMb);
    const urls = Object.values(dev.api.findResources('AWS::Lambda::Url')).map((r) => (r as Json).Properties);
    expect(urls).toHaveLength(1);
    expect(urls[0]).toMatchObject({ AuthType: 'NONE', InvokeMode: 'RESPONSE_STREAM' });
    expect(urls[0].TargetFunctionArn).toEqual({ 'Fn::GetAtt': [logicalId, 'Arn'] });
    const permissions = Object.values(dev.api.findResources('AWS::Lambda::Permission'))
      .map((r) => (r as Json).Properties)
      .filter((p) => JSON.stringify(p.FunctionName).includes(logicalId));
    expect(permissions.map((p) => p.Action).sort()).toEqual(['lambda:InvokeFunction', 'lambda:InvokeFunctionUrl']);
    for (const permission of permissions) expect(permission.Principal).toBe('*');
    const url = permissions.find((p) => p.Action === 'lambda:InvokeFunctionUrl');
    expect(url.FunctionUrlAuthType).toBe('NONE');
    expect(permissions.find((p) => p.Action === 'lambda:InvokeFunction').InvokedViaFunctionUrl).toBe(true);
  });

  it('holds the stream to a reserved concurrency per stage (dev 10, prod 100, -c runEventsConcurrency), and alarms its throttles', () => {
    expect(streamFunction(dev.api)[1].Properties.ReservedConcurrentExecutions).toBe(10);
    const production = prod();
    const [logicalId, fn] = streamFunction(production.api);
    expect(fn.Properties.ReservedConcurrentExecutions).toBe(100);
    const throttles = Object.values(production.api.findResources('AWS::CloudWatch::Alarm'))
      .map((r) => (r as Json).Properties)
      .filter((p) => p.MetricName === 'Throttles' && JSON.stringify(p.Dimensions).includes(logicalId));
    expect(throttles).toHaveLength(1);
    expect(throttles[0].AlarmDescription).toMatch(/Runbook: docs\/operations\.md, Alarms, RunEventsThrottles\.$/);
    const raised = build({ [contextKeys.runEventsConcurrency]: '25' });
    expect(streamFunction(raised.api)[1].Properties.ReservedConcurrentExecutions).toBe(25);
    // Lambda keeps 100 of the account's concurrency unreserved.
    expect(() => build({ [contextKeys.runEventsConcurrency]: '901' })).toThrow(/unreserved/);
    expect(() => build({ [contextKeys.runEventsConcurrency]: '0' })).toThrow(/runEventsConcurrency/);
  });

  it('outputs the stream’s base URL and its function URL host, and gives GetRun the base as RUN_EVENTS_BASE_URL', () => {
    const outputs = dev.api.toJSON().Outputs as Json;
    const [urlId] = Object.keys(dev.api.findResources('AWS::Lambda::Url'));
    const base = outputs.RunEventsBaseUrl.Value;
    expect(base).toEqual({ 'Fn::Join': ['', [{ 'Fn::GetAtt': [urlId, 'FunctionUrl'] }, 'api/v1']] });
    expect(JSON.stringify(outputs.RunEventsOriginHost.Value)).toContain(urlId);
    expect(getRunEnvironment(dev.api)[envNames.runEventsBaseUrl]).toEqual(base);
    // A run token's `links.events` is the same address.
    expect(getRunEnvironment(dev.api, 'CreateRunToken')[envNames.runEventsBaseUrl]).toEqual(base);
    // The function's own address is not in its environment (a cycle): it reads it from the request.
    const [, fn] = streamFunction(dev.api);
    expect(fn.Properties.Environment.Variables[envNames.runEventsBaseUrl]).toBeUndefined();
  });

  it('passes cdk-nag on dev and on prod with the edge serving the stream', () => {
    expect(dev.nagFindings).toEqual([]);
    const withEdge = prod({ [edgeContextKeys.domain]: domain, [edgeContextKeys.eventsOrigin]: originHost });
    expect(withEdge.nagFindings).toEqual([]);
  });
});

describe('the run event stream behind the edge', () => {
  it('sends the stream’s origin the origin secret, which the stream function then requires and may read', () => {
    const built = prod({ [edgeContextKeys.domain]: domain, [edgeContextKeys.eventsOrigin]: originHost });
    const config = Object.values(built.edge!.findResources('AWS::CloudFront::Distribution'))[0]!.Properties
      .DistributionConfig as Json;
    const name = originSecretName(stackNames(built.config).api);
    const streamOrigin = config.Origins.find((o: Json) => o.DomainName === originHost);
    expect(streamOrigin.OriginCustomHeaders).toEqual([
      { HeaderName: originHeader, HeaderValue: `{{resolve:secretsmanager:${name}:SecretString:::}}` },
    ]);
    const [, fn] = streamFunction(built.api);
    expect(fn.Properties.Environment.Variables[envNames.originSecret]).toEqual(expect.anything());
    const [secretId] = Object.keys(built.api.findResources('AWS::SecretsManager::Secret'));
    const role = fn.Properties.Role['Fn::GetAtt'][0];
    const reads = Object.values(built.api.findResources('AWS::IAM::Policy'))
      .filter((p) => (p as Json).Properties.Roles.some((r: Json) => r.Ref === role))
      .flatMap((p) => (p as Json).Properties.PolicyDocument.Statement)
      .filter((st: Json) => JSON.stringify(st.Resource ?? '').includes(secretId!));
    expect(reads).toHaveLength(1);
    // Without the edge's stream (no eventsOrigin), the stream's own URL is public: no check.
    const direct = prod({ [edgeContextKeys.domain]: domain });
    expect(streamFunction(direct.api)[1].Properties.Environment.Variables[envNames.originSecret]).toBeUndefined();
  });

  it('routes /api/v1/runs/*/events to the function URL, uncached, every viewer header but Host, OPTIONS for a run token’s preflight, under the web ACL', () => {
    const built = prod({ [edgeContextKeys.domain]: domain, [edgeContextKeys.eventsOrigin]: originHost });
    const config = Object.values(built.edge!.findResources('AWS::CloudFront::Distribution'))[0]!.Properties
      .DistributionConfig as Json;
    const behaviour = config.CacheBehaviors.find((b: Json) => b.PathPattern === runEventsPath);
    expect(runEventsPath).toBe(`${basePath}/runs/*/events`);
    expect(behaviour).toMatchObject({
      CachePolicyId: managed.cachingDisabled,
      OriginRequestPolicyId: managed.allViewerExceptHostHeader,
      ViewerProtocolPolicy: 'https-only',
      AllowedMethods: ['GET', 'HEAD', 'OPTIONS'],
    });
    const origin = config.Origins.find((o: Json) => o.Id === behaviour.TargetOriginId);
    expect(origin.DomainName).toBe(originHost);
    expect(origin.CustomOriginConfig).toMatchObject({ OriginProtocolPolicy: 'https-only' });
    expect(config.WebACLId).toBeDefined();
    // The Run's link is the stage's domain then, on GetRun and on the stream's own function.
    const base = `https://${domain.name}${basePath}`;
    expect(getRunEnvironment(built.api)[envNames.runEventsBaseUrl]).toBe(base);
    expect(streamFunction(built.api)[1].Properties.Environment.Variables[envNames.runEventsBaseUrl]).toBe(base);
  });

  it('without the origin host, serves no stream behaviour and links the function URL', () => {
    const built = prod({ [edgeContextKeys.domain]: domain });
    const config = Object.values(built.edge!.findResources('AWS::CloudFront::Distribution'))[0]!.Properties
      .DistributionConfig as Json;
    expect(config.CacheBehaviors.some((b: Json) => b.PathPattern === runEventsPath)).toBe(false);
    expect(JSON.stringify(getRunEnvironment(built.api)[envNames.runEventsBaseUrl])).toContain('FunctionUrl');
  });

  it('takes only a function URL host as the origin', () => {
    expect(parseEventsOrigin(originHost)).toBe(originHost);
    expect(parseEventsOrigin(undefined)).toBeUndefined();
    for (const bad of [
      'https://x.lambda-url.eu-west-1.on.aws/',
      'evil.example.com',
      'x.lambda-url.eu-west-1.on.aws.evil.com',
      7,
    ]) {
      expect(() => parseEventsOrigin(bad)).toThrow(/function URL host/);
    }
  });
});
