import { CfnOutput, Duration, SecretValue, Stack, type StackProps, Validations } from 'aws-cdk-lib';
import {
  AllowedMethods,
  CachedMethods,
  CachePolicy,
  CacheQueryStringBehavior,
  Distribution,
  HttpVersion,
  OriginProtocolPolicy,
  OriginRequestCookieBehavior,
  OriginRequestHeaderBehavior,
  OriginRequestPolicy,
  OriginRequestQueryStringBehavior,
  OriginSslPolicy,
  PriceClass,
  ResponseHeadersPolicy,
  SecurityPolicyProtocol,
  ViewerProtocolPolicy,
} from 'aws-cdk-lib/aws-cloudfront';
import { HttpOrigin } from 'aws-cdk-lib/aws-cloudfront-origins';
import { AaaaRecord, ARecord, RecordTarget } from 'aws-cdk-lib/aws-route53';
import { CloudFrontTarget } from 'aws-cdk-lib/aws-route53-targets';
import { CfnWebACL } from 'aws-cdk-lib/aws-wafv2';
import { Construct } from 'constructs';
import {
  anonymousPathPrefixes,
  edgeCachedPaths,
  greaterThanPattern,
  largestBodyBytes,
  originHeader,
  pathPrefixOf,
  payloadTooLargeBody,
  rateLimitedBody,
  unboundedBodyRouteIds,
} from '../platform/edge.ts';
import { basePath, routes } from '../platform/routes.ts';
import { zoneAndCertificate } from './api-domain.ts';
import { type DomainConfig, type EdgeConfig, filesHostOf } from './edge-config.ts';

/** CloudFront and its web ACL live in us-east-1, whatever the stage's region. */
export const edgeRegion = 'us-east-1';

/**
 * The core rule set's rules that inspect the body, counted instead of blocking. Our bodies are
 * JSON data: workflow definitions up to 256 KiB (SizeRestrictions_BODY blocks above 8 KB), prompts
 * and PythonSandbox code that may well contain HTML, `../` or URLs, none of which the service
 * renders, opens or fetches as such (webhook and file URLs pass its own address guard). Counted,
 * they still show in the web ACL's metrics.
 */
export const countedCommonRules = [
  'SizeRestrictions_BODY',
  'CrossSiteScripting_BODY',
  'GenericLFI_BODY',
  'GenericRFI_BODY',
  'EC2MetaDataSSRF_BODY',
] as const;

/** Seconds a caller the rate rules block is told to wait: the rules' evaluation window. */
const rateWindowSeconds = 60;

export interface EdgeStackProps extends StackProps {
  edge: EdgeConfig & { domain: DomainConfig };
  /**
   * The origin secret's name (lib/origin-secret.ts, made by the API stack, replicated to this
   * region): its value goes to every origin as `originHeader`.
   */
  originSecretName: string;
}

/**
 * The stage's edge, in us-east-1 (CloudFront's certificates and CLOUDFRONT-scope web ACLs exist
 * only there): a web ACL, a distribution answering the public name in front of the API's own
 * custom domain (`origin.<name>`, made by the API stack, so nothing crosses regions but that name,
 * which both stacks read from the configuration), and the public name's alias records. Only the
 * docs assets and the OpenAPI document are cached, as long as the function's Cache-Control says.
 */
export class EdgeStack extends Stack {
  readonly distribution: Distribution;
  readonly webAcl: CfnWebACL;
  /** The downloads' distribution on `files.<name>`, when `filesOrigin` is set. */
  readonly files: FilesDistribution | undefined;

  constructor(scope: Construct, id: string, props: EdgeStackProps) {
    super(scope, id, props);
    const { edge } = props;
    const { domain } = edge;
    // CloudFront's certificate must be in us-east-1, this stack's region.
    const { zone, certificate } = zoneAndCertificate(this, domain, domain.name, domain.edgeCertificateArn);

    this.webAcl = new CfnWebACL(this, 'WebAcl', {
      scope: 'CLOUDFRONT',
      defaultAction: { allow: {} },
      visibilityConfig: metrics(`${this.stackName}-web-acl`),
      customResponseBodies: {
        PayloadTooLarge: { contentType: 'APPLICATION_JSON', content: payloadTooLargeBody(largestBodyBytes) },
        RateLimited: { contentType: 'APPLICATION_JSON', content: rateLimitedBody },
      },
      rules: webAclRules(edge),
    });

    // Resolved by CloudFormation at deploy time (a dynamic reference): the value is never in the template.
    const customHeaders = {
      [originHeader]: SecretValue.secretsManager(props.originSecretName).unsafeUnwrap(),
    };
    const origin = new HttpOrigin(domain.apiDomainName, {
      protocolPolicy: OriginProtocolPolicy.HTTPS_ONLY,
      originSslProtocols: [OriginSslPolicy.TLS_V1_2],
      customHeaders,
    });
    // Honours the function's Cache-Control (no header: not kept); `v` names the docs asset's
    // version; CloudFront normalizes Accept-Encoding into the key and forwards it.
    const honourOrigin = new CachePolicy(this, 'HonourOriginCachePolicy', {
      comment: 'Workflow Run API docs assets and OpenAPI document: as long as the function says',
      defaultTtl: Duration.seconds(0),
      minTtl: Duration.seconds(0),
      maxTtl: Duration.days(365),
      queryStringBehavior: CacheQueryStringBehavior.allowList('v'),
      enableAcceptEncodingGzip: true,
      enableAcceptEncodingBrotli: true,
    });
    const cached = {
      origin,
      viewerProtocolPolicy: ViewerProtocolPolicy.HTTPS_ONLY,
      allowedMethods: AllowedMethods.ALLOW_GET_HEAD,
      cachedMethods: CachedMethods.CACHE_GET_HEAD,
      cachePolicy: honourOrigin,
    };
    this.distribution = new Distribution(this, 'Distribution', {
      comment: `Workflow Run API: ${domain.name}`,
      domainNames: [domain.name],
      certificate,
      minimumProtocolVersion: SecurityPolicyProtocol.TLS_V1_2_2021,
      httpVersion: HttpVersion.HTTP2_AND_3,
      // North America and Europe edges: the cheapest class; callers elsewhere reach the nearest of them.
      priceClass: PriceClass.PRICE_CLASS_100,
      webAclId: this.webAcl.attrArn,
      defaultBehavior: {
        origin,
        // Callers are servers: a plain-HTTP request is refused (403), never redirected with its key.
        viewerProtocolPolicy: ViewerProtocolPolicy.HTTPS_ONLY,
        allowedMethods: AllowedMethods.ALLOW_ALL,
        // Nothing keyed is cached. With caching disabled, AllViewerExceptHostHeader forwards every
        // header (Authorization, Idempotency-Key, Content-Type, ...), cookie and query string, and
        // lets CloudFront set Host to the origin's name, which the API's custom domain answers
        // (docs/decisions/edge.md, "The edge").
        cachePolicy: CachePolicy.CACHING_DISABLED,
        originRequestPolicy: OriginRequestPolicy.ALL_VIEWER_EXCEPT_HOST_HEADER,
      },
      additionalBehaviors: {
        ...Object.fromEntries(edgeCachedPaths.map((path) => [path, cached])),
        ...(edge.eventsOrigin && { [runEventsPath]: runEventsBehaviour(edge.eventsOrigin, customHeaders) }),
      },
    });
    Validations.of(this.distribution).acknowledge(
      {
        id: 'AwsSolutions-CFR1',
        reason:
          'No geo restriction: the API serves its customers wherever they are; abuse is bounded per IP by the web ACL ' +
          'and per route by the HTTP API throttles.',
      },
      {
        id: 'AwsSolutions-CFR3',
        reason:
          "No CloudFront access log: every request that reaches the API is in the HTTP API's access log, and what the " +
          "web ACL blocks is in its metrics and sampled requests; a log bucket would add cost and a second copy of callers' addresses.",
      },
    );

    const target = RecordTarget.fromAlias(new CloudFrontTarget(this.distribution));
    new ARecord(this, 'AliasA', { zone, recordName: domain.name, target });
    new AaaaRecord(this, 'AliasAAAA', { zone, recordName: domain.name, target });

    this.files = edge.filesOrigin
      ? new FilesDistribution(this, 'Files', { domain, bucketHost: edge.filesOrigin })
      : undefined;

    new CfnOutput(this, 'PublicUrl', { value: `https://${domain.name}` });
    new CfnOutput(this, 'DistributionDomainName', { value: this.distribution.distributionDomainName });
    new CfnOutput(this, 'WebAclArn', { value: this.webAcl.attrArn });
  }
}

/**
 * Downloads on their own host, `files.<name>`, with `X-Content-Type-Options: nosniff` on every
 * answer (S3 cannot send it). The API gives each presigned GET here in place of the bucket's host
 * (functions/domain/served-files.ts); this distribution sends its path and every query parameter
 * to the bucket's regional host, which the URL was signed for, with that host as Host (a custom
 * origin; the viewer's Host is not forwarded), so S3 checks the signature, type and disposition
 * overrides and expiry exactly as before. No origin access control: the bucket stays private and
 * only a valid presigned URL opens an object. Nothing is cached: a URL lives five minutes and a
 * cached answer would outlive it. Its own host, not a path of the API's, so a stored file never
 * shares the API's origin. No web ACL: every request carries a signature S3 checks, a failed one
 * costs one CloudFront request, and the file link that leads here passed the API's web ACL.
 */
export class FilesDistribution extends Construct {
  readonly distribution: Distribution;
  readonly responseHeadersPolicy: ResponseHeadersPolicy;
  readonly host: string;

  /**
   * With `domain`, on `files.<name>` (its certificate and alias records); without, on the
   * distribution's own `*.cloudfront.net` name (the API stack's default on a stage whose edge does
   * not serve downloads), still its own host apart from the API's.
   */
  constructor(scope: Construct, id: string, props: { domain?: DomainConfig | undefined; bucketHost: string }) {
    super(scope, id);
    const named = props.domain && { domain: props.domain, host: filesHostOf(props.domain) };
    const custom = named && { ...named, ...zoneAndCertificate(this, named.domain, named.host) };
    this.responseHeadersPolicy = new ResponseHeadersPolicy(this, 'NoSniff', {
      comment: 'Workflow Run API downloads: X-Content-Type-Options: nosniff over whatever the origin sends',
      securityHeadersBehavior: { contentTypeOptions: { override: true } },
    });
    // A custom policy, not a managed one: with a managed origin request policy CloudFront drops
    // response-content-type and response-content-disposition on the way to S3, and those are signed.
    const signedQuery = new OriginRequestPolicy(this, 'SignedQuery', {
      comment: 'Workflow Run API downloads: the presigned query, whole; no viewer header, cookie or Host',
      queryStringBehavior: OriginRequestQueryStringBehavior.all(),
      headerBehavior: OriginRequestHeaderBehavior.none(),
      cookieBehavior: OriginRequestCookieBehavior.none(),
    });
    this.distribution = new Distribution(this, 'Distribution', {
      comment: `Workflow Run API downloads: ${custom?.host ?? 'the default files host'}`,
      ...(custom && {
        domainNames: [custom.host],
        certificate: custom.certificate,
        minimumProtocolVersion: SecurityPolicyProtocol.TLS_V1_2_2021,
      }),
      httpVersion: HttpVersion.HTTP2_AND_3,
      priceClass: PriceClass.PRICE_CLASS_100,
      defaultBehavior: {
        origin: new HttpOrigin(props.bucketHost, {
          protocolPolicy: OriginProtocolPolicy.HTTPS_ONLY,
          originSslProtocols: [OriginSslPolicy.TLS_V1_2],
        }),
        viewerProtocolPolicy: ViewerProtocolPolicy.HTTPS_ONLY,
        allowedMethods: AllowedMethods.ALLOW_GET_HEAD,
        cachePolicy: CachePolicy.CACHING_DISABLED,
        originRequestPolicy: signedQuery,
        responseHeadersPolicy: this.responseHeadersPolicy,
      },
    });
    Validations.of(this.distribution).acknowledge(
      {
        id: 'AwsSolutions-CFR1',
        reason: 'No geo restriction: downloads go wherever the API serves its customers.',
      },
      {
        id: 'AwsSolutions-CFR2',
        reason:
          'No web ACL: every request carries an S3 signature that S3 checks; the file link that leads here passed the ' +
          "API's web ACL, and a forged request costs one CloudFront request and S3's refusal.",
      },
      {
        id: 'AwsSolutions-CFR3',
        reason:
          'No CloudFront access log: each download follows a file link whose request is in the HTTP API access log; ' +
          "a log bucket would add cost and a second copy of callers' addresses.",
      },
    );
    this.host = custom?.host ?? this.distribution.distributionDomainName;
    if (custom) {
      const target = RecordTarget.fromAlias(new CloudFrontTarget(this.distribution));
      new ARecord(this, 'AliasA', { zone: custom.zone, recordName: custom.host, target });
      new AaaaRecord(this, 'AliasAAAA', { zone: custom.zone, recordName: custom.host, target });
    } else {
      Validations.of(this.distribution).acknowledge({
        id: 'AwsSolutions-CFR4',
        reason:
          "No custom domain: the distribution's default *.cloudfront.net certificate, whose security policy CloudFront " +
          'fixes; every request still carries an S3 signature, and a stage with a domain serves files.<name> at TLS 1.2.',
      });
    }
    new CfnOutput(this, 'FilesUrl', { value: `https://${this.host}` });
  }
}

/** The run stream's path on the edge (GET /runs/{jobId}/events; platform/routes.ts). */
export const runEventsPath = `${basePath}/runs/*/events`;

/**
 * The run stream's behaviour: to its function URL (AuthType NONE: the function checks the
 * key), never cached, every viewer header but Host (Authorization, Last-Event-ID) and the query
 * (a run token's `access_token`) forwarded; the function URL answers its own host only. OPTIONS
 * too: the function answers a run token's CORS preflight. The web ACL covers it as every path.
 */
const runEventsBehaviour = (host: string, customHeaders: Record<string, string>) => ({
  origin: new HttpOrigin(host, {
    protocolPolicy: OriginProtocolPolicy.HTTPS_ONLY,
    originSslProtocols: [OriginSslPolicy.TLS_V1_2],
    customHeaders,
  }),
  viewerProtocolPolicy: ViewerProtocolPolicy.HTTPS_ONLY,
  allowedMethods: AllowedMethods.ALLOW_GET_HEAD_OPTIONS,
  cachePolicy: CachePolicy.CACHING_DISABLED,
  originRequestPolicy: OriginRequestPolicy.ALL_VIEWER_EXCEPT_HOST_HEADER,
});

const metrics = (metricName: string): CfnWebACL.VisibilityConfigProperty => ({
  cloudWatchMetricsEnabled: true,
  metricName,
  sampledRequestsEnabled: true,
});

const startsWith = (prefix: string): CfnWebACL.StatementProperty => ({
  byteMatchStatement: {
    fieldToMatch: { uriPath: {} },
    positionalConstraint: 'STARTS_WITH',
    searchString: prefix,
    textTransformations: [{ priority: 0, type: 'NONE' }],
  },
});

const rateLimited = (): CfnWebACL.RuleActionProperty => ({
  block: {
    customResponse: {
      responseCode: 429,
      customResponseBodyKey: 'RateLimited',
      responseHeaders: [{ name: 'retry-after', value: String(rateWindowSeconds) }],
    },
  },
});

/** The web ACL's rules, in the order WAF evaluates them. */
const webAclRules = (edge: EdgeConfig): CfnWebACL.RuleProperty[] => {
  // A prefix another one covers is dropped (`/docs` covers `/docs/assets/`).
  const prefixes = anonymousPathPrefixes(routes).filter(
    (prefix, _, all) => !all.some((other) => other !== prefix && prefix.startsWith(other)),
  );
  const anonymousPaths: CfnWebACL.StatementProperty =
    prefixes.length === 1 ? startsWith(prefixes[0]!) : { orStatement: { statements: prefixes.map(startsWith) } };
  const unbounded = routes.filter((route) => unboundedBodyRouteIds.includes(route.id)).map(pathPrefixOf);
  const unboundedPaths: CfnWebACL.StatementProperty =
    unbounded.length === 1 ? startsWith(unbounded[0]!) : { orStatement: { statements: unbounded.map(startsWith) } };
  return [
    {
      // First, so a body no route accepts gets the service's 413, not another rule's answer. WAF
      // compares the header as text: the pattern spells "above largestBodyBytes" digit by digit.
      // Not on the provider webhooks, whose bodies are the providers' (platform/edge.ts).
      name: 'BodyTooLarge',
      priority: 0,
      action: { block: { customResponse: { responseCode: 413, customResponseBodyKey: 'PayloadTooLarge' } } },
      statement: {
        andStatement: {
          statements: [
            {
              regexMatchStatement: {
                // singleHeader is untyped JSON in the L1: its key is written as CloudFormation spells it.
                fieldToMatch: { singleHeader: { Name: 'content-length' } },
                regexString: greaterThanPattern(largestBodyBytes),
                textTransformations: [{ priority: 0, type: 'NONE' }],
              },
            },
            { notStatement: { statement: unboundedPaths } },
          ],
        },
      },
      visibilityConfig: metrics('BodyTooLarge'),
    },
    {
      name: 'AnonymousRoutesPerIp',
      priority: 1,
      action: rateLimited(),
      statement: {
        rateBasedStatement: {
          limit: edge.perIpPerMinute.anonymous,
          evaluationWindowSec: rateWindowSeconds,
          aggregateKeyType: 'IP',
          scopeDownStatement: anonymousPaths,
        },
      },
      visibilityConfig: metrics('AnonymousRoutesPerIp'),
    },
    {
      name: 'AllRoutesPerIp',
      priority: 2,
      action: rateLimited(),
      statement: {
        rateBasedStatement: {
          limit: edge.perIpPerMinute.all,
          evaluationWindowSec: rateWindowSeconds,
          aggregateKeyType: 'IP',
        },
      },
      visibilityConfig: metrics('AllRoutesPerIp'),
    },
    {
      name: 'AWSManagedRulesCommonRuleSet',
      priority: 3,
      overrideAction: { none: {} },
      statement: {
        managedRuleGroupStatement: {
          vendorName: 'AWS',
          name: 'AWSManagedRulesCommonRuleSet',
          ruleActionOverrides: countedCommonRules.map((name) => ({ name, actionToUse: { count: {} } })),
        },
      },
      visibilityConfig: metrics('AWSManagedRulesCommonRuleSet'),
    },
  ];
};
