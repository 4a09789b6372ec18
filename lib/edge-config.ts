/**
 * The stage's edge, from its configuration: the custom domain (cdk.json `stages.<stage>.domain`,
 * or `-c domain='{"name":…}'`), whether CloudFront and AWS WAF front it (`-c edge=true|false`),
 * and the per-route throttles and per-IP rates of each stage. `lib/stages.ts` puts the result in
 * `StageConfig.edge`; docs/deploy.md ("Behind your own domain and WAF") walks through it.
 */
import type { TrafficClass } from '../platform/edge.ts';

/** Context keys of the edge (`-c key=value`, or the stage's block in cdk.json). */
export const edgeContextKeys = {
  /**
   * An object `{ "name": "api.example.com", "hostedZoneId": "Z…", "hostedZoneName": "example.com" }`
   * (a JSON string on the command line); optional `certificateArn` (the API's regional certificate),
   * `edgeCertificateArn` (CloudFront's, in us-east-1) and `originName` (default `origin.<name>`).
   */
  domain: 'domain',
  /** `true` or `false`: CloudFront and AWS WAF in front of the API. Default: on prod when a domain is set; off on dev. */
  edge: 'edge',
  /**
   * The run event stream's function URL host (the API stack's `RunEventsOriginHost` output), which
   * the edge, in another region, cannot read from the stack: with it, CloudFront serves the stream
   * on the stage's domain too (docs/deploy.md, "The run event stream").
   */
  eventsOrigin: 'eventsOrigin',
  /**
   * The library bucket's regional host (the stateful stack's `BucketRegionalDomainName` output,
   * `<bucket>.s3.<region>.amazonaws.com`), which the edge, in another region, cannot read from the
   * stack: with it, CloudFront serves downloads on `files.<name>` with `X-Content-Type-Options:
   * nosniff`, and the API gives its presigned GETs there (docs/deploy.md, "Downloads through the edge").
   */
  filesOrigin: 'filesOrigin',
} as const;

/** Where the stage is reached, and the certificates that prove it. */
export interface DomainConfig {
  /** The public name callers use, e.g. `api.example.com`. */
  name: string;
  /** The Route 53 hosted zone that holds `name` (its records and the certificates' validation). */
  hostedZoneId: string;
  hostedZoneName: string;
  /**
   * The name of the API's own (regional) custom domain. Without the edge it is `name`; with it,
   * CloudFront answers `name` and reaches the API here: `originName`, default `origin.<name>`.
   */
  apiDomainName: string;
  /** An existing ACM certificate for `apiDomainName`, in the API's region; default: one DNS-validated in the zone. */
  certificateArn: string | undefined;
  /** An existing ACM certificate for `name` in us-east-1 (CloudFront's); default: one DNS-validated in the zone. */
  edgeCertificateArn: string | undefined;
}

/** A steady rate (requests per second) and a burst, as API Gateway throttles. */
export interface Throttle {
  rateLimit: number;
  burstLimit: number;
}

export interface EdgeConfig {
  /** The custom domain; undefined: the API's `execute-api` endpoint. */
  domain: DomainConfig | undefined;
  /** CloudFront with AWS WAF in front (needs `domain`). */
  cloudFront: boolean;
  /**
   * The HTTP API's route settings for the keyless routes (`platform/edge.ts`); the keyed routes keep
   * the stage's default (`StageConfig.api`). Lower than it, so a flood of the docs or their assets
   * is throttled on its own routes and leaves the keyed routes their share.
   */
  routeThrottles: Record<Exclude<TrafficClass, 'keyed'>, Throttle>;
  /**
   * The WAF's per-IP rate rules, in requests a minute (AWS WAF's lowest limit is 10 per window):
   * `anonymous` for the anonymous routes, `all` for every route together.
   */
  perIpPerMinute: { anonymous: number; all: number };
  /** The run event stream's function URL host, when the edge is to serve the stream (`eventsOrigin`). */
  eventsOrigin: string | undefined;
  /** The library bucket's regional host, when the edge is to serve downloads (`filesOrigin`). */
  filesOrigin: string | undefined;
  /** What synthesis should warn about (`lib/build-app.ts` annotates them). */
  warnings: readonly string[];
}

type EdgeDefaults = Pick<EdgeConfig, 'routeThrottles' | 'perIpPerMinute'>;

/** Each stage's edge limits (dev's stage-wide throttle is 5/s, burst 10; prod's 50/s, burst 100). */
export const edgeDefaults: Readonly<Record<'dev' | 'prod', EdgeDefaults>> = {
  dev: {
    routeThrottles: { anonymous: { rateLimit: 1, burstLimit: 3 }, signed: { rateLimit: 3, burstLimit: 5 } },
    perIpPerMinute: { anonymous: 30, all: 300 },
  },
  prod: {
    routeThrottles: { anonymous: { rateLimit: 5, burstLimit: 10 }, signed: { rateLimit: 25, burstLimit: 50 } },
    // A docs page load is the page and a few assets; a server behind one address may hold several keys.
    perIpPerMinute: { anonymous: 60, all: 600 },
  },
};

const hostname = /^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/;
const certificateArn = /^arn:aws[a-z-]*:acm:([a-z0-9-]+):\d{12}:certificate\/[0-9a-f-]+$/;

/** The `domain` context value (an object from cdk.json, or its JSON text from `-c`), or undefined. */
export const parseDomain = (value: unknown, cloudFront: boolean): DomainConfig | undefined => {
  if (value === undefined || value === '') return undefined;
  let raw: unknown = value;
  if (typeof value === 'string') {
    try {
      raw = JSON.parse(value);
    } catch {
      throw new Error(`context domain must be an object {"name","hostedZoneId","hostedZoneName"}, got ${value}`);
    }
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new Error(
      `context domain must be an object {"name","hostedZoneId","hostedZoneName"}, got ${JSON.stringify(value)}`,
    );
  }
  const fields = raw as Record<string, unknown>;
  const known = ['name', 'hostedZoneId', 'hostedZoneName', 'certificateArn', 'edgeCertificateArn', 'originName'];
  const unknown = Object.keys(fields).filter((key) => !known.includes(key));
  if (unknown.length > 0) throw new Error(`context domain: unknown field(s) ${unknown.join(', ')}`);
  const text = (key: string, required: boolean): string | undefined => {
    const field = fields[key];
    if (field === undefined && !required) return undefined;
    if (typeof field !== 'string' || field === '') throw new Error(`context domain.${key} must be a non-empty string`);
    return field;
  };
  const name = text('name', true)!.toLowerCase();
  const zoneName = text('hostedZoneName', true)!.toLowerCase().replace(/\.$/, '');
  const zoneId = text('hostedZoneId', true)!;
  if (!hostname.test(name)) throw new Error(`context domain.name must be a host name, got ${JSON.stringify(name)}`);
  if (!/^Z[A-Z0-9]{1,31}$/.test(zoneId)) {
    throw new Error(`context domain.hostedZoneId must be a Route 53 zone id (Z…), got ${JSON.stringify(zoneId)}`);
  }
  const inZone = (host: string) => host === zoneName || host.endsWith(`.${zoneName}`);
  if (!inZone(name)) throw new Error(`context domain.name ${name} is not in the hosted zone ${zoneName}`);
  const originName = text('originName', false)?.toLowerCase();
  if (originName !== undefined && (!hostname.test(originName) || !inZone(originName) || originName === name)) {
    throw new Error(
      `context domain.originName must be another host name in ${zoneName}, got ${JSON.stringify(originName)}`,
    );
  }
  const regional = text('certificateArn', false);
  if (regional !== undefined && !certificateArn.test(regional)) {
    throw new Error(`context domain.certificateArn must be an ACM certificate ARN, got ${JSON.stringify(regional)}`);
  }
  const edge = text('edgeCertificateArn', false);
  // CloudFront takes certificates from us-east-1 only.
  if (edge !== undefined && certificateArn.exec(edge)?.[1] !== 'us-east-1') {
    throw new Error(
      `context domain.edgeCertificateArn must be an ACM certificate ARN in us-east-1, got ${JSON.stringify(edge)}`,
    );
  }
  return {
    name,
    hostedZoneId: zoneId,
    hostedZoneName: zoneName,
    apiDomainName: cloudFront ? (originName ?? `origin.${name}`) : name,
    certificateArn: regional,
    edgeCertificateArn: edge,
  };
};

/**
 * The stage's edge. CloudFront and WAF are on by default on prod (off on dev), and need a domain:
 * `-c edge=true` without one fails synthesis; prod's default without one is no edge, with a
 * warning, since the pinned prod stage names its domain.
 */
export const edgeConfig = (stage: 'dev' | 'prod', context: (key: string) => unknown): EdgeConfig => {
  const warnings: string[] = [];
  const edgeValue = context(edgeContextKeys.edge);
  const asked =
    edgeValue === undefined || edgeValue === ''
      ? undefined
      : edgeValue === true || edgeValue === 'true'
        ? true
        : edgeValue === false || edgeValue === 'false'
          ? false
          : (() => {
              throw new Error(`context edge must be true or false, got ${JSON.stringify(edgeValue)}`);
            })();
  const domainValue = context(edgeContextKeys.domain);
  const hasDomain = domainValue !== undefined && domainValue !== '';
  if (asked === true && !hasDomain) {
    throw new Error(
      `context edge=true needs a domain (context ${edgeContextKeys.domain}): CloudFront answers its name`,
    );
  }
  if (asked === undefined && stage === 'prod' && !hasDomain) {
    warnings.push(
      `Stage prod has no domain (context ${edgeContextKeys.domain}): no CloudFront or WAF in front of it; callers reach the execute-api endpoint.`,
    );
  }
  const cloudFront = hasDomain && (asked ?? stage === 'prod');
  // Without it the edge serves no stream and the Run links the function URL, which works: no
  // warning, since a first deploy cannot know the host yet (docs/deploy.md, "The run event stream").
  const eventsOrigin = parseEventsOrigin(context(edgeContextKeys.eventsOrigin));
  // Without it downloads come from the bucket's host, with no nosniff (S3 cannot send it): no
  // warning, as for the stream, since a first deploy cannot know the bucket's name yet
  // (docs/deploy.md, "Downloads through the edge").
  const filesOrigin = parseFilesOrigin(context(edgeContextKeys.filesOrigin));
  return {
    domain: parseDomain(domainValue, cloudFront),
    cloudFront,
    eventsOrigin,
    filesOrigin,
    ...edgeDefaults[stage],
    warnings,
  };
};

/** A Lambda function URL's host, as the `eventsOrigin` context names it. */
const functionUrlHost = /^[a-z0-9]{1,63}\.lambda-url\.[a-z]{2}(-[a-z]+)+-\d\.on\.aws$/;

/** The `eventsOrigin` context value, or undefined. */
export const parseEventsOrigin = (value: unknown): string | undefined => {
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string' || !functionUrlHost.test(value)) {
    throw new Error(
      `context ${edgeContextKeys.eventsOrigin} must be a function URL host (<id>.lambda-url.<region>.on.aws), got ${JSON.stringify(value)}`,
    );
  }
  return value;
};

/** An S3 bucket's regional host, as the `filesOrigin` context names it (a bucket name without dots). */
const bucketRegionalHost = /^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]\.s3\.[a-z]{2}(-[a-z]+)+-\d\.amazonaws\.com$/;

/** The `filesOrigin` context value, or undefined. */
export const parseFilesOrigin = (value: unknown): string | undefined => {
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string' || !bucketRegionalHost.test(value)) {
    throw new Error(
      `context ${edgeContextKeys.filesOrigin} must be the bucket's regional host (<bucket>.s3.<region>.amazonaws.com), got ${JSON.stringify(value)}`,
    );
  }
  return value;
};

/** The host of the edge's downloads: `files.<name>`, in the same zone. */
export const filesHostOf = (domain: Pick<DomainConfig, 'name'>): string => `files.${domain.name}`;

/**
 * Where the API gives its presigned GETs (`FILES_BASE_URL`): `https://files.<name>` when the edge
 * serves downloads, else undefined (the bucket's own host).
 */
export const filesBaseUrl = (edge: EdgeConfig): string | undefined =>
  edge.cloudFront && edge.domain && edge.filesOrigin ? `https://${filesHostOf(edge.domain)}` : undefined;

/** The stage's public base URL when a domain is set: `https://<name>`. */
export const domainBaseUrl = (edge: EdgeConfig): string | undefined =>
  edge.domain ? `https://${edge.domain.name}` : undefined;
