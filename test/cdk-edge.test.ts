/**
 * The edge on the synthesized templates: the custom domain (certificate, DomainName, ApiMapping,
 * the execute-api endpoint disabled), CloudFront and its web ACL in us-east-1, and the keyless
 * routes' throttles; and the pure rules behind them (`platform/edge.ts`), held to the functions'
 * own body limit and error bodies.
 */
import './support/test-providers.ts';
import fs from 'node:fs';
import path from 'node:path';
import { Template } from 'aws-cdk-lib/assertions';
import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { maxCreateWorkflowBodyBytes } from '../functions/http/workflow-request.ts';
import { buildApp } from '../lib/build-app.ts';
import { edgeContextKeys, edgeDefaults } from '../lib/edge-config.ts';
import { countedCommonRules, edgeRegion } from '../lib/edge-stack.ts';
import { originSecretName } from '../lib/origin-secret.ts';
import { contextKeys, stageDefaults } from '../lib/stages.ts';
import { envNames } from '../platform/definitions.ts';
import {
  greaterThanPattern,
  largestBodyBytes,
  originHeader,
  payloadTooLargeBody,
  rateLimitedBody,
  routeKeyOf,
  signedRouteIds,
  trafficClassOf,
} from '../platform/edge.ts';
import { basePath, httpApiRoutes, routes } from '../platform/routes.ts';
import { messages } from '../schemas/error-messages.ts';
import { PayloadTooLargeErrorSchema, RateLimitExceededErrorSchema } from '../schemas/errors.ts';
import { pinnedProd } from './support/stages.ts';

const testContext = { 'aws:cdk:bundling-stacks': [], '@aws-cdk/core:appMode': 'inmemory' };
const domain = { name: 'api.example.com', hostedZoneId: 'Z0123456789EXAMPLE', hostedZoneName: 'example.com' };
/** prod as pinned in cdk.json (test/support/stages.ts), with these pins. */
const prodPins = {
  // The pinned prod's model defaults run on Replicate: its providers must be on (test/support/stages.ts).
  [contextKeys.providers]:
    'bedrock,replicate:ssm:/workflow-run-api/prod/replicate,openai-compatible:workflow-run-api/prod/providers/openai-compatible',
  [contextKeys.alarmEmail]: 'ops@example.com',
  [edgeContextKeys.domain]: domain,
};
const prodContext = { ...testContext, ...pinnedProd(prodPins) };
/** CloudFront's managed policies, by the ids its documentation gives. */
const managed = {
  cachingDisabled: '4135ea2d-6df8-44a3-9df3-4b5a84be39ad',
  allViewerExceptHostHeader: 'b689b0a8-53d0-40ab-baf2-68738e2966ac',
};

// CloudFormation JSON read by path; each assertion checks the shape it reads.
// biome-ignore lint/suspicious/noExplicitAny: template JSON has no static type
type Json = Record<string, any>;
const resourcesOf = (template: Template, type: string): Json[] =>
  Object.values(template.findResources(type)).map((r) => r as Json);
const only = (template: Template, type: string): Json => {
  const found = resourcesOf(template, type);
  expect(found, type).toHaveLength(1);
  return found[0]!;
};

/** Synthesizes the app (cdk-nag runs and throws on any unacknowledged finding) and returns its parts. */
const build = (context: Record<string, unknown>) => {
  const built = buildApp(context, {});
  const assembly = built.app.synth();
  const report = JSON.parse(fs.readFileSync(path.join(assembly.directory, 'validation-report.json'), 'utf8')) as {
    pluginReports: { conclusion: string; violations: unknown[] }[];
  };
  return {
    ...built,
    nagFindings: report.pluginReports.filter((r) => r.conclusion !== 'success' || r.violations.length > 0),
    apiTemplate: Template.fromStack(built.api),
    edgeTemplate: built.edge ? Template.fromStack(built.edge) : undefined,
  };
};

/**
 * The API stack's own files distribution (a stage whose edge does not serve downloads): on its
 * `*.cloudfront.net` name, from the bucket's regional host, nosniff over every answer, the whole
 * presigned query forwarded and nothing cached; every function that makes file links gives them there.
 */
const expectDefaultFilesDistribution = (built: ReturnType<typeof build>) => {
  expect(built.nagFindings).toEqual([]);
  const distributions = built.apiTemplate.findResources('AWS::CloudFront::Distribution');
  const ids = Object.keys(distributions);
  expect(ids).toHaveLength(1);
  const id = ids[0]!;
  const config = (distributions[id] as Json).Properties.DistributionConfig;
  expect(config.Aliases ?? []).toEqual([]);
  expect(config.Origins).toHaveLength(1);
  expect(JSON.stringify(config.Origins[0].DomainName)).toMatch(/RegionalDomainName/);
  expect(config.Origins[0].CustomOriginConfig).toMatchObject({ OriginProtocolPolicy: 'https-only' });
  const behaviour = config.DefaultCacheBehavior;
  expect(behaviour).toMatchObject({
    ViewerProtocolPolicy: 'https-only',
    AllowedMethods: ['GET', 'HEAD'],
    CachePolicyId: managed.cachingDisabled,
  });
  const policy = built.apiTemplate.findResources('AWS::CloudFront::ResponseHeadersPolicy')[
    behaviour.ResponseHeadersPolicyId.Ref
  ] as Json;
  expect(policy.Properties.ResponseHeadersPolicyConfig.SecurityHeadersConfig).toEqual({
    ContentTypeOptions: { Override: true },
  });
  const query = built.apiTemplate.findResources('AWS::CloudFront::OriginRequestPolicy')[
    behaviour.OriginRequestPolicyId.Ref
  ] as Json;
  expect(query.Properties.OriginRequestPolicyConfig).toMatchObject({
    QueryStringsConfig: { QueryStringBehavior: 'all' },
    HeadersConfig: { HeaderBehavior: 'none' },
  });
  const linkMakers = resourcesOf(built.apiTemplate, 'AWS::Lambda::Function').filter(
    (fn) => envNames.publicBaseUrl in (fn.Properties.Environment?.Variables ?? {}),
  );
  expect(linkMakers.length).toBeGreaterThan(0);
  for (const fn of linkMakers) {
    expect(fn.Properties.Environment.Variables[envNames.filesBaseUrl]).toEqual({
      'Fn::Join': ['', ['https://', { 'Fn::GetAtt': [id, 'DomainName'] }]],
    });
  }
};

describe('every stage serves file links through a files distribution with nosniff, by default', {
  timeout: 180_000,
}, () => {
  it('dev, by default (no domain, no edge)', () => {
    expectDefaultFilesDistribution(build(testContext));
  });

  it('dev with its own domain and no edge', () => {
    expectDefaultFilesDistribution(build({ ...testContext, [edgeContextKeys.domain]: domain }));
  });
});

describe('the edge rules (platform/edge.ts)', () => {
  it('greaterThanPattern matches exactly the integers above its bound', () => {
    for (const bound of [0, 7, 9, 10, 99, 100, 262_144, 1_000_000, 65_536, 8_999]) {
      const pattern = new RegExp(greaterThanPattern(bound));
      const probes = new Set<number>([0, 1, 9, 10, 11, 99, 100, 101, 999_999, 10_000_000]);
      for (let d = -120; d <= 120; d++) if (bound + d >= 0) probes.add(bound + d);
      for (let x = 0; x < 2000; x++) probes.add(Math.floor(Math.random() * bound * 3));
      for (const x of probes) {
        expect(pattern.test(String(x)), `${x} > ${bound}`).toBe(x > bound);
        expect(pattern.test(`00${x}`), `00${x} > ${bound}`).toBe(x > bound);
      }
      for (const junk of ['', 'abc', '-5', '1e9', ' 300000', '300000 ', '3.5e6']) {
        expect(pattern.test(junk), junk).toBe(false);
      }
    }
  });

  it('bounds bodies by the largest one a route accepts, answered with the documented 413 and 429 bodies', () => {
    expect(largestBodyBytes).toBe(maxCreateWorkflowBodyBytes);
    const tooLarge = JSON.parse(payloadTooLargeBody(largestBodyBytes));
    expect(v.is(PayloadTooLargeErrorSchema, tooLarge)).toBe(true);
    expect(tooLarge).toEqual({ error: messages.payloadTooLarge(largestBodyBytes) });
    expect(v.is(RateLimitExceededErrorSchema, JSON.parse(rateLimitedBody))).toBe(true);
  });

  it('classes every keyless route as anonymous or signed, and every keyed one as keyed', () => {
    const keyless = routes.filter((route) => route.scope === null).map((route) => route.id);
    for (const id of signedRouteIds) expect(keyless).toContain(id);
    const byClass = (c: string) => routes.filter((route) => trafficClassOf(route) === c).map((route) => route.id);
    expect(byClass('anonymous').sort()).toEqual([
      'GetDocs',
      'GetDocsAsset',
      'GetNodeType',
      'GetOpenApi',
      'ListNodeTypes',
    ]);
    expect(byClass('signed').sort()).toEqual(['GetFileLink', 'ProviderWebhook']);
    expect(byClass('keyed')).toEqual(routes.filter((route) => route.scope !== null).map((route) => route.id));
  });
});

describe('edge configuration', { timeout: 180_000 }, () => {
  it('refuses a malformed domain, one outside its zone, a CloudFront certificate outside us-east-1, and an edge without a domain', () => {
    const dev = (extra: Record<string, unknown>) => () => buildApp({ ...testContext, ...extra }, {});
    expect(dev({ domain: 'api.example.com' })).toThrow(/context domain must be an object/);
    expect(dev({ domain: { ...domain, name: 'api.other.org' } })).toThrow(/not in the hosted zone example.com/);
    expect(dev({ domain: { ...domain, hostedZoneId: 'nope' } })).toThrow(/hostedZoneId/);
    expect(dev({ domain: { ...domain, extra: 1 } })).toThrow(/unknown field/);
    expect(
      dev({
        domain: {
          ...domain,
          edgeCertificateArn: 'arn:aws:acm:eu-west-1:123456789012:certificate/0b6f1d5e-1a2b-4c3d-8e9f-001122334455',
        },
      }),
    ).toThrow(/us-east-1/);
    expect(dev({ edge: 'true' })).toThrow(/edge=true needs a domain/);
    expect(dev({ edge: 'maybe' })).toThrow(/edge must be true or false/);
  });

  it('takes the domain as JSON text from -c too, and makes it the default public base URL', () => {
    const { config } = buildApp({ ...testContext, domain: JSON.stringify(domain) }, {});
    expect(config.edge.domain?.name).toBe('api.example.com');
    expect(config.publicBaseUrl).toBe('https://api.example.com');
    const given = buildApp({ ...testContext, domain, publicBaseUrl: 'https://hooks.example.com' }, {});
    expect(given.config.publicBaseUrl).toBe('https://hooks.example.com');
  });

  it('is off on dev by default and on prod by default; prod cannot go without a domain', () => {
    expect(buildApp(testContext, {}).edge).toBeUndefined();
    expect(buildApp({ ...testContext, domain }, {}).edge).toBeUndefined();
    expect(buildApp({ ...testContext, domain, edge: 'true' }, {}).edge).toBeDefined();
    expect(buildApp(prodContext, {}).edge).toBeDefined();
    expect(buildApp({ ...prodContext, edge: 'false' }, {}).edge).toBeUndefined();
    // prod pins its domain (lib/stage-pins.ts): without one, synthesis fails rather than warns.
    expect(() =>
      buildApp({ ...testContext, ...pinnedProd({ [edgeContextKeys.domain]: undefined, providers: 'bedrock' }) }, {}),
    ).toThrow(/stage prod must pin domain/);
  });
});

describe('dev with its own domain and no edge', { timeout: 180_000 }, () => {
  const built = build({ ...testContext, domain });
  const api = built.apiTemplate;

  it('is nag clean and has no edge stack, nor an origin secret for one', () => {
    expect(built.nagFindings).toEqual([]);
    expect(built.edge).toBeUndefined();
    expect(resourcesOf(api, 'AWS::SecretsManager::Secret')).toEqual([]);
    for (const fn of resourcesOf(api, 'AWS::Lambda::Function')) {
      expect(fn.Properties.Environment?.Variables?.[envNames.originSecret]).toBeUndefined();
    }
  });

  it('serves the public name from the API: certificate in the zone, DomainName, ApiMapping, alias, execute-api disabled', () => {
    const certificate = only(api, 'AWS::CertificateManager::Certificate');
    expect(certificate.Properties).toMatchObject({
      DomainName: 'api.example.com',
      ValidationMethod: 'DNS',
      DomainValidationOptions: [{ DomainName: 'api.example.com', HostedZoneId: domain.hostedZoneId }],
    });
    const domainName = only(api, 'AWS::ApiGatewayV2::DomainName');
    expect(domainName.Properties).toMatchObject({
      DomainName: 'api.example.com',
      DomainNameConfigurations: [{ EndpointType: 'REGIONAL', SecurityPolicy: 'TLS_1_2' }],
    });
    const mapping = only(api, 'AWS::ApiGatewayV2::ApiMapping');
    expect(mapping.Properties.Stage).toBe('$default');
    expect(mapping.Properties.ApiKey).toBeUndefined();
    expect(only(api, 'AWS::ApiGatewayV2::Api').Properties.DisableExecuteApiEndpoint).toBe(true);
    const record = only(api, 'AWS::Route53::RecordSet');
    expect(record.Properties).toMatchObject({ Name: 'api.example.com.', Type: 'A', HostedZoneId: domain.hostedZoneId });
    expect(record.Properties.AliasTarget.DNSName['Fn::GetAtt'][1]).toBe('RegionalDomainName');
  });

  it("points providers' webhooks and file links at the public name", () => {
    for (const fn of resourcesOf(api, 'AWS::Lambda::Function')) {
      const variables = fn.Properties.Environment?.Variables ?? {};
      if (envNames.publicBaseUrl in variables)
        expect(variables[envNames.publicBaseUrl]).toBe('https://api.example.com');
    }
    expect(api.findOutputs('ApiUrl').ApiUrl?.Value).toBe(`https://api.example.com${basePath}`);
  });

  it('gives no deployed function the local switches (loopback, the local CA, the local refusal hint)', () => {
    const functions = resourcesOf(api, 'AWS::Lambda::Function');
    expect(functions.length).toBeGreaterThan(0);
    for (const fn of functions) {
      const variables = fn.Properties.Environment?.Variables ?? {};
      for (const name of ['ALLOW_PRIVATE_CALLBACKS', 'WEBHOOK_CA_FILE', 'LOCAL_STACK'])
        expect(variables).not.toHaveProperty(name);
    }
  });

  it('uses an existing certificate when the configuration names one', () => {
    const arn = 'arn:aws:acm:eu-west-1:123456789012:certificate/0b6f1d5e-1a2b-4c3d-8e9f-001122334455';
    const template = Template.fromStack(
      buildApp({ ...testContext, domain: { ...domain, certificateArn: arn } }, {}).api,
    );
    template.resourceCountIs('AWS::CertificateManager::Certificate', 0);
    expect(only(template, 'AWS::ApiGatewayV2::DomainName').Properties.DomainNameConfigurations[0].CertificateArn).toBe(
      arn,
    );
  });
});

describe('dev without a domain (the default)', { timeout: 180_000 }, () => {
  const built = build(testContext);
  const api = built.apiTemplate;

  it('is nag clean, keeps the execute-api endpoint and has no domain or edge', () => {
    expect(built.nagFindings).toEqual([]);
    expect(only(api, 'AWS::ApiGatewayV2::Api').Properties.DisableExecuteApiEndpoint).toBe(false);
    api.resourceCountIs('AWS::ApiGatewayV2::DomainName', 0);
    api.resourceCountIs('AWS::ApiGatewayV2::ApiMapping', 0);
    api.resourceCountIs('AWS::CertificateManager::Certificate', 0);
    expect(built.edge).toBeUndefined();
  });

  it('throttles the keyless routes below the stage, and leaves the keyed routes its default', () => {
    const stage = only(api, 'AWS::ApiGatewayV2::Stage');
    const stageDefault = stageDefaults.dev.api;
    expect(stage.Properties.DefaultRouteSettings).toEqual({
      ThrottlingRateLimit: stageDefault.rateLimit,
      ThrottlingBurstLimit: stageDefault.burstLimit,
    });
    const expected = Object.fromEntries(
      routes
        .filter((route) => trafficClassOf(route) !== 'keyed')
        .map((route) => {
          const throttle = edgeDefaults.dev.routeThrottles[trafficClassOf(route) as 'anonymous' | 'signed'];
          return [
            routeKeyOf(route),
            { ThrottlingRateLimit: throttle.rateLimit, ThrottlingBurstLimit: throttle.burstLimit },
          ];
        }),
    );
    expect(stage.Properties.RouteSettings).toEqual(expected);
    for (const setting of Object.values<Json>(stage.Properties.RouteSettings)) {
      expect(setting.ThrottlingRateLimit).toBeLessThan(stageDefault.rateLimit);
      expect(setting.ThrottlingBurstLimit).toBeLessThan(stageDefault.burstLimit);
    }
    const { anonymous, signed } = edgeDefaults.dev.routeThrottles;
    expect(anonymous.rateLimit).toBeLessThan(signed.rateLimit);
  });

  it('creates the stage after the routes its settings name (CloudFormation rejects a setting for a missing route)', () => {
    const resources = api.toJSON().Resources as Record<string, Json>;
    const stage = Object.values(resources).find((r) => r.Type === 'AWS::ApiGatewayV2::Stage')!;
    const routeKeys = new Map(
      Object.entries(resources)
        .filter(([, r]) => r.Type === 'AWS::ApiGatewayV2::Route')
        .map(([id, r]) => [r.Properties.RouteKey as string, id]),
    );
    for (const key of Object.keys(stage.Properties.RouteSettings)) {
      expect(routeKeys.has(key), key).toBe(true);
      expect(stage.DependsOn).toContain(routeKeys.get(key));
    }
  });
});

describe('prod behind CloudFront and AWS WAF', { timeout: 180_000 }, () => {
  const built = build(prodContext);
  const api = built.apiTemplate;
  const edge = built.edgeTemplate!;

  it('is nag clean, in us-east-1, deployed after the API stack, with written reasons for what it acknowledges', () => {
    expect(built.nagFindings).toEqual([]);
    expect(built.edge!.region).toBe(edgeRegion);
    expect(built.edge!.dependencies).toContain(built.api);
    expect(built.edge!.terminationProtection).toBe(true);
  });

  it('gives the API its origin name, with execute-api disabled; CloudFront answers the public name', () => {
    expect(only(api, 'AWS::ApiGatewayV2::DomainName').Properties.DomainName).toBe('origin.api.example.com');
    expect(only(api, 'AWS::CertificateManager::Certificate').Properties.DomainName).toBe('origin.api.example.com');
    expect(only(api, 'AWS::ApiGatewayV2::Api').Properties.DisableExecuteApiEndpoint).toBe(true);
    expect(only(api, 'AWS::Route53::RecordSet').Properties.Name).toBe('origin.api.example.com.');
    expect(only(edge, 'AWS::CertificateManager::Certificate').Properties).toMatchObject({
      DomainName: 'api.example.com',
      ValidationMethod: 'DNS',
    });
    const records = resourcesOf(edge, 'AWS::Route53::RecordSet');
    expect(records.map((r) => `${r.Properties.Name} ${r.Properties.Type}`).sort()).toEqual([
      'api.example.com. A',
      'api.example.com. AAAA',
    ]);
    for (const record of records) {
      expect(record.Properties.AliasTarget.DNSName['Fn::GetAtt']).toEqual([
        expect.stringMatching(/^Distribution/),
        'DomainName',
      ]);
    }
  });

  it('sends every route to the API uncached with all its headers, and caches only the docs assets and the OpenAPI document', () => {
    const config = only(edge, 'AWS::CloudFront::Distribution').Properties.DistributionConfig;
    expect(config.Aliases).toEqual(['api.example.com']);
    expect(config.ViewerCertificate).toMatchObject({
      MinimumProtocolVersion: 'TLSv1.2_2021',
      SslSupportMethod: 'sni-only',
    });
    expect(config.WebACLId['Fn::GetAtt'][1]).toBe('Arn');
    expect(config.Origins).toHaveLength(1);
    expect(config.Origins[0]).toMatchObject({
      DomainName: 'origin.api.example.com',
      CustomOriginConfig: { OriginProtocolPolicy: 'https-only', OriginSSLProtocols: ['TLSv1.2'] },
    });
    expect(config.DefaultCacheBehavior).toMatchObject({
      CachePolicyId: managed.cachingDisabled,
      OriginRequestPolicyId: managed.allViewerExceptHostHeader,
      ViewerProtocolPolicy: 'https-only',
    });
    expect([...config.DefaultCacheBehavior.AllowedMethods].sort()).toEqual(
      ['DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT'].sort(),
    );
    const behaviors = config.CacheBehaviors as Json[];
    expect(behaviors.map((b) => b.PathPattern)).toEqual([`${basePath}/docs/assets/*`, `${basePath}/openapi.json`]);
    const policy = only(edge, 'AWS::CloudFront::CachePolicy').Properties.CachePolicyConfig;
    for (const behavior of behaviors) {
      expect(behavior.AllowedMethods).toEqual(['GET', 'HEAD']);
      expect(behavior.OriginRequestPolicyId).toBeUndefined();
      expect(behavior.CachePolicyId).toEqual({ Ref: expect.stringMatching(/^HonourOriginCachePolicy/) });
    }
    // The function's Cache-Control decides (no header: not kept), up to a year; `v` is the asset's version.
    expect(policy).toMatchObject({ DefaultTTL: 0, MinTTL: 0, MaxTTL: 31_536_000 });
    expect(policy.ParametersInCacheKeyAndForwardedToOrigin).toMatchObject({
      EnableAcceptEncodingGzip: true,
      EnableAcceptEncodingBrotli: true,
      QueryStringsConfig: { QueryStringBehavior: 'whitelist', QueryStrings: ['v'] },
      HeadersConfig: { HeaderBehavior: 'none' },
      CookiesConfig: { CookieBehavior: 'none' },
    });
  });

  it('has a CLOUDFRONT web ACL: the 413 on an oversized body first, per-IP rates, then the common rule set', () => {
    const acl = only(edge, 'AWS::WAFv2::WebACL').Properties;
    expect(acl.Scope).toBe('CLOUDFRONT');
    expect(acl.DefaultAction).toEqual({ Allow: {} });
    const rules = acl.Rules as Json[];
    expect(rules.map((r) => [r.Priority, r.Name])).toEqual([
      [0, 'BodyTooLarge'],
      [1, 'AnonymousRoutesPerIp'],
      [2, 'AllRoutesPerIp'],
      [3, 'AWSManagedRulesCommonRuleSet'],
    ]);
    const [size, anonymous, all, common] = rules as [Json, Json, Json, Json];

    expect(size.Action.Block.CustomResponse).toEqual({ ResponseCode: 413, CustomResponseBodyKey: 'PayloadTooLarge' });
    const body = acl.CustomResponseBodies.PayloadTooLarge;
    expect(body.ContentType).toBe('APPLICATION_JSON');
    expect(v.is(PayloadTooLargeErrorSchema, JSON.parse(body.Content))).toBe(true);
    const [contentLength, notWebhooks] = size.Statement.AndStatement.Statements as [Json, Json];
    expect(contentLength.RegexMatchStatement.FieldToMatch).toEqual({ SingleHeader: { Name: 'content-length' } });
    const pattern = new RegExp(contentLength.RegexMatchStatement.RegexString);
    expect(pattern.test(String(largestBodyBytes))).toBe(false);
    expect(pattern.test(String(largestBodyBytes + 1))).toBe(true);
    expect(pattern.test(String(7 * 1024 * 1024))).toBe(true);
    expect(notWebhooks.NotStatement.Statement.ByteMatchStatement).toMatchObject({
      SearchString: `${basePath}/provider-webhooks/`,
      PositionalConstraint: 'STARTS_WITH',
    });

    const rate = (rule: Json) => rule.Statement.RateBasedStatement;
    expect(rate(anonymous)).toMatchObject({
      Limit: edgeDefaults.prod.perIpPerMinute.anonymous,
      EvaluationWindowSec: 60,
      AggregateKeyType: 'IP',
    });
    expect(rate(all)).toMatchObject({ Limit: edgeDefaults.prod.perIpPerMinute.all, EvaluationWindowSec: 60 });
    expect(rate(all).ScopeDownStatement).toBeUndefined();
    expect(rate(anonymous).Limit).toBeLessThan(rate(all).Limit);
    // WAF's lowest rate limit is 10 a window.
    expect(rate(anonymous).Limit).toBeGreaterThanOrEqual(10);
    const scoped = (rate(anonymous).ScopeDownStatement.OrStatement.Statements as Json[]).map(
      (s) => s.ByteMatchStatement.SearchString,
    );
    expect(scoped.sort()).toEqual([`${basePath}/docs`, `${basePath}/node-types`, `${basePath}/openapi.json`]);
    for (const rule of [anonymous, all]) {
      expect(rule.Action.Block.CustomResponse).toMatchObject({
        ResponseCode: 429,
        CustomResponseBodyKey: 'RateLimited',
        ResponseHeaders: [{ Name: 'retry-after', Value: '60' }],
      });
    }
    expect(v.is(RateLimitExceededErrorSchema, JSON.parse(acl.CustomResponseBodies.RateLimited.Content))).toBe(true);

    expect(common.OverrideAction).toEqual({ None: {} });
    expect(common.Statement.ManagedRuleGroupStatement).toMatchObject({
      VendorName: 'AWS',
      Name: 'AWSManagedRulesCommonRuleSet',
    });
    const overrides = common.Statement.ManagedRuleGroupStatement.RuleActionOverrides as Json[];
    expect(overrides.map((o) => o.Name)).toEqual([...countedCommonRules]);
    expect(overrides.map((o) => o.Name)).toContain('SizeRestrictions_BODY');
    for (const o of overrides) expect(o.ActionToUse).toEqual({ Count: {} });
  });

  it('sends every origin the origin secret as a header, and lets every route function read it and nothing else', () => {
    const secret = only(api, 'AWS::SecretsManager::Secret');
    const [secretId] = Object.keys(api.findResources('AWS::SecretsManager::Secret'));
    const name = originSecretName(built.api.stackName);
    expect(secret.Properties.Name).toBe(name);
    // Generated by Secrets Manager: no value in any template.
    expect(secret.Properties.GenerateSecretString).toMatchObject({ PasswordLength: 64, ExcludePunctuation: true });
    expect(secret.Properties.SecretString).toBeUndefined();
    // cdk.json pins us-west-2: the secret is replicated to the edge's region, where the edge reads it.
    expect(built.api.region).not.toBe(edgeRegion);
    expect(secret.Properties.ReplicaRegions).toEqual([{ Region: edgeRegion }]);

    const config = only(edge, 'AWS::CloudFront::Distribution').Properties.DistributionConfig;
    expect(config.Origins.length).toBeGreaterThan(0);
    for (const origin of config.Origins) {
      expect(origin.OriginCustomHeaders, origin.DomainName).toEqual([
        { HeaderName: originHeader, HeaderValue: `{{resolve:secretsmanager:${name}:SecretString:::}}` },
      ]);
    }

    // Each route function names the secret and may read it: GetSecretValue on it alone.
    const routeDescriptions = new Set(httpApiRoutes.map((route) => `${route.method} ${basePath}${route.path}`));
    const functions = Object.entries(api.findResources('AWS::Lambda::Function')).filter(([, fn]) =>
      routeDescriptions.has(String((fn as Json).Properties.Description)),
    );
    expect(functions).toHaveLength(httpApiRoutes.length);
    const policies = resourcesOf(api, 'AWS::IAM::Policy');
    for (const [id, fn] of functions) {
      expect((fn as Json).Properties.Environment.Variables[envNames.originSecret], id).toEqual(expect.anything());
      const role = (fn as Json).Properties.Role['Fn::GetAtt'][0];
      const reads = policies
        .filter((p) => p.Properties.Roles.some((r: Json) => r.Ref === role))
        .flatMap((p) => p.Properties.PolicyDocument.Statement)
        .filter((st: Json) => JSON.stringify(st.Resource ?? '').includes(secretId!));
      expect(reads, id).toHaveLength(1);
      expect(reads[0].Action, id).toBe('secretsmanager:GetSecretValue');
      expect(reads[0].Resource, id).toEqual({ Ref: secretId });
    }
    // The workers are not fronted by the edge, nor the stream while the edge does not serve it
    // (no eventsOrigin: callers reach its function URL): neither the name nor the grant.
    const workerFunctions = Object.values(api.findResources('AWS::Lambda::Function')).filter(
      (fn) => !routeDescriptions.has(String((fn as Json).Properties.Description)),
    );
    for (const fn of workerFunctions) {
      expect((fn as Json).Properties.Environment?.Variables?.[envNames.originSecret]).toBeUndefined();
    }
  });

  it('replicates the origin secret to the edge’s region when the stage is elsewhere, not when it is there, or decides at deploy time when it is not known', () => {
    const elsewhere = build({ ...prodContext, ...pinnedProd({ ...prodPins, region: 'us-west-2' }) });
    expect(only(elsewhere.apiTemplate, 'AWS::SecretsManager::Secret').Properties.ReplicaRegions).toEqual([
      { Region: edgeRegion },
    ]);
    expect(elsewhere.nagFindings).toEqual([]);
    // A stage in the edge's own region (its two image defaults pinned to models us-east-1 serves).
    const flux = 'replicate:black-forest-labs/flux-schnell';
    const inEdgeRegion = build({
      ...prodContext,
      ...pinnedProd({ ...prodPins, region: edgeRegion, modelDefaults: { ImageGen: flux, DiffusionWorker: flux } }),
    });
    expect(only(inEdgeRegion.apiTemplate, 'AWS::SecretsManager::Secret').Properties.ReplicaRegions).toBeUndefined();
    const agnostic = build({ ...testContext, domain, [edgeContextKeys.edge]: 'true' });
    const secret = only(agnostic.apiTemplate, 'AWS::SecretsManager::Secret').Properties;
    const [condition] = Object.keys(agnostic.apiTemplate.toJSON().Conditions ?? {}).filter((c) =>
      c.includes('InEdgeRegion'),
    );
    expect(secret.ReplicaRegions).toEqual({
      'Fn::If': [condition, { Ref: 'AWS::NoValue' }, [{ Region: edgeRegion }]],
    });
  });

  it('keeps the keyless routes throttled below the stage on prod too', () => {
    const stage = only(api, 'AWS::ApiGatewayV2::Stage').Properties;
    expect(stage.RouteSettings[`GET ${basePath}/docs/assets/{name}`]).toEqual({
      ThrottlingRateLimit: edgeDefaults.prod.routeThrottles.anonymous.rateLimit,
      ThrottlingBurstLimit: edgeDefaults.prod.routeThrottles.anonymous.burstLimit,
    });
    expect(stage.RouteSettings[`POST ${basePath}/workflows`]).toBeUndefined();
    expect(edgeDefaults.prod.routeThrottles.signed.rateLimit).toBeLessThan(stageDefaults.prod.api.rateLimit);
  });
});

describe('prod downloads through the edge, with nosniff', { timeout: 180_000 }, () => {
  const bucketHost = 'stateful-librarybucket1a2b3c4d-abcdef123456.s3.eu-west-1.amazonaws.com';
  const built = build({ ...prodContext, [edgeContextKeys.filesOrigin]: bucketHost });
  const edge = built.edgeTemplate!;
  const filesDistribution = () => {
    const found = resourcesOf(edge, 'AWS::CloudFront::Distribution').filter((d) =>
      d.Properties.DistributionConfig.Aliases.includes('files.api.example.com'),
    );
    expect(found).toHaveLength(1);
    return found[0]!.Properties.DistributionConfig;
  };
  /** The logical id of the edge resource `ref` names. */
  const logicalIdOf = (ref: Json) => ref.Ref as string;

  it('is nag clean and serves files.<name> from the bucket host, every answer with X-Content-Type-Options: nosniff', () => {
    expect(built.nagFindings).toEqual([]);
    const config = filesDistribution();
    expect(config.Origins).toHaveLength(1);
    expect(config.Origins[0]).toMatchObject({
      DomainName: bucketHost,
      CustomOriginConfig: { OriginProtocolPolicy: 'https-only', OriginSSLProtocols: ['TLSv1.2'] },
    });
    // No origin access control: S3 checks the presigned URL itself.
    expect(config.Origins[0].OriginAccessControlId ?? '').toBe('');
    const behaviour = config.DefaultCacheBehavior;
    expect(config.CacheBehaviors ?? []).toEqual([]);
    expect(behaviour).toMatchObject({
      ViewerProtocolPolicy: 'https-only',
      AllowedMethods: ['GET', 'HEAD'],
      CachePolicyId: managed.cachingDisabled,
    });
    const policies = edge.findResources('AWS::CloudFront::ResponseHeadersPolicy');
    const policy = policies[logicalIdOf(behaviour.ResponseHeadersPolicyId)] as Json;
    expect(policy.Properties.ResponseHeadersPolicyConfig.SecurityHeadersConfig).toEqual({
      ContentTypeOptions: { Override: true },
    });
    // The API's distribution is unchanged by it: no files behaviour there.
    const apiConfig = resourcesOf(edge, 'AWS::CloudFront::Distribution').find((d) =>
      d.Properties.DistributionConfig.Aliases.includes('api.example.com'),
    )!.Properties.DistributionConfig;
    expect(apiConfig.DefaultCacheBehavior.ResponseHeadersPolicyId).toBeUndefined();
  });

  it('forwards the whole presigned query and neither the Host nor any other viewer header', () => {
    const behaviour = filesDistribution().DefaultCacheBehavior;
    const policies = edge.findResources('AWS::CloudFront::OriginRequestPolicy');
    const policy = policies[logicalIdOf(behaviour.OriginRequestPolicyId)] as Json;
    expect(policy.Properties.OriginRequestPolicyConfig).toMatchObject({
      QueryStringsConfig: { QueryStringBehavior: 'all' },
      HeadersConfig: { HeaderBehavior: 'none' },
      CookiesConfig: { CookieBehavior: 'none' },
    });
  });

  it('has its own certificate and alias records for files.<name>, and the API gives presigned GETs there', () => {
    const certificates = resourcesOf(edge, 'AWS::CertificateManager::Certificate').map((c) => c.Properties.DomainName);
    expect(certificates.sort()).toEqual(['api.example.com', 'files.api.example.com']);
    const records = resourcesOf(edge, 'AWS::Route53::RecordSet').map(
      (r) => `${r.Properties.Name} ${r.Properties.Type}`,
    );
    expect(records).toEqual(expect.arrayContaining(['files.api.example.com. A', 'files.api.example.com. AAAA']));
    const readers = resourcesOf(built.apiTemplate, 'AWS::Lambda::Function').filter(
      (fn) => envNames.publicBaseUrl in (fn.Properties.Environment?.Variables ?? {}),
    );
    expect(readers.length).toBeGreaterThan(0);
    for (const fn of readers) {
      expect(fn.Properties.Environment.Variables[envNames.filesBaseUrl]).toBe('https://files.api.example.com');
    }
  });

  it('without filesOrigin the edge has no files distribution, and the API stack serves downloads through its own', () => {
    const plain = build(prodContext);
    expect(resourcesOf(plain.edgeTemplate!, 'AWS::CloudFront::Distribution')).toHaveLength(1);
    expect(resourcesOf(plain.edgeTemplate!, 'AWS::CloudFront::ResponseHeadersPolicy')).toHaveLength(0);
    expectDefaultFilesDistribution(plain);
  });

  it('with filesOrigin the API stack has no files distribution of its own', () => {
    expect(resourcesOf(built.apiTemplate, 'AWS::CloudFront::Distribution')).toHaveLength(0);
  });

  it('refuses a filesOrigin that is not a bucket regional host', () => {
    for (const bad of [
      'example.com',
      'my.bucket.s3.eu-west-1.amazonaws.com',
      'bucket.s3.amazonaws.com',
      'https://b.s3.eu-west-1.amazonaws.com',
    ]) {
      expect(() => build({ ...prodContext, [edgeContextKeys.filesOrigin]: bad }), bad).toThrow(/filesOrigin/);
    }
  });
});
