/**
 * With the edge on, the stage's origins (the API's custom domain, the stream's function URL)
 * answer only requests CloudFront sent them, so its web ACL cannot be gone around: CloudFront adds
 * `originHeader` with the value of the stack's origin secret, and each function the edge fronts
 * compares it before anything else (keyedHandler, keyedStream, publicHandler). A request without
 * it, or with another value, is answered as a path the API does not have (API Gateway's 404). A
 * function that no edge fronts has no secret named (`ORIGIN_SECRET_ID`) and checks nothing.
 *
 * The value is read from Secrets Manager by its HTTPS API, signed with the function's own
 * credentials (aws4fetch: no AWS SDK in the public functions' bundles), cached per container for
 * 5 minutes, never logged nor put in an error. Its previous version is accepted too, so a rotation
 * (a new value, then the edge redeployed) refuses nothing on the way (docs/deploy.md).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { AwsClient } from 'aws4fetch';
import { envNames } from '../../platform/definitions.ts';
import { originHeader } from '../../platform/edge.ts';

/** Whether a request came through the edge, from its headers (payload 2.0: names lower-case). */
export type OriginCheck = (headers: Readonly<Record<string, string | undefined>>) => Promise<boolean>;

/** No edge in front: every request is the edge's. */
export const anyOrigin: OriginCheck = async () => true;

/** How long the secret's values are reused before they are read again. */
export const originSecretCacheMs = 5 * 60 * 1000;

/** A version of the secret: the current one, or the one before it (undefined when there is none). */
export type OriginSecretReader = (version: 'AWSCURRENT' | 'AWSPREVIOUS') => Promise<string | undefined>;

const digest = (text: string) => createHash('sha256').update(text).digest();

/** The check against a secret's current and previous values, read through `read` and cached. */
export const originSecretCheck = (
  read: OriginSecretReader,
  now: () => number = Date.now,
  cacheMs = originSecretCacheMs,
): OriginCheck => {
  let cached: { values: Promise<Buffer[]>; until: number } | undefined;
  const values = () => {
    if (cached && cached.until > now()) return cached.values;
    const reading = Promise.all([read('AWSCURRENT'), read('AWSPREVIOUS')]).then((found) =>
      found.filter((value): value is string => value !== undefined && value !== '').map(digest),
    );
    const entry = { values: reading, until: now() + cacheMs };
    cached = entry;
    // A failed read is not kept: the next request reads again.
    reading.catch(() => {
      if (cached === entry) cached = undefined;
    });
    return reading;
  };
  return async (headers) => {
    const sent = headers[originHeader];
    if (sent === undefined || sent === '') return false;
    const known = await values();
    if (known.length === 0) throw new Error('the origin secret has no value');
    const hash = digest(sent);
    return known.some((value) => timingSafeEqual(value, hash));
  };
};

/**
 * GetSecretValue of `secretId` over Secrets Manager's JSON API, signed with the credentials of
 * `env` (Lambda's), at `AWS_ENDPOINT_URL_SECRETS_MANAGER` when set (the local secret store).
 */
export const secretsManagerReader =
  (secretId: string, env: NodeJS.ProcessEnv): OriginSecretReader =>
  async (version) => {
    const region = env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? 'us-east-1';
    const client = new AwsClient({
      accessKeyId: env.AWS_ACCESS_KEY_ID ?? '',
      secretAccessKey: env.AWS_SECRET_ACCESS_KEY ?? '',
      ...(env.AWS_SESSION_TOKEN ? { sessionToken: env.AWS_SESSION_TOKEN } : {}),
      region,
      service: 'secretsmanager',
      retries: 2,
    });
    const endpoint = env.AWS_ENDPOINT_URL_SECRETS_MANAGER ?? `https://secretsmanager.${region}.amazonaws.com/`;
    const response = await client.fetch(endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/x-amz-json-1.1', 'x-amz-target': 'secretsmanager.GetSecretValue' },
      body: JSON.stringify({ SecretId: secretId, VersionStage: version }),
    });
    const body = (await response.json().catch(() => ({}))) as { SecretString?: string; __type?: string };
    if (response.ok) return body.SecretString;
    // The error's type only: its message is never the value, but nothing of the answer needs saying.
    const type = String(body.__type ?? '')
      .split('#')
      .pop();
    if (version === 'AWSPREVIOUS' && type === 'ResourceNotFoundException') return undefined;
    throw new Error(`Secrets Manager answered ${response.status} ${type} for the origin secret`);
  };

/** The stage's check: the origin secret the stack names, or none (no edge in front of this function). */
export const originCheckFromEnv = (env: NodeJS.ProcessEnv = process.env): OriginCheck => {
  const secretId = env[envNames.originSecret];
  return secretId ? originSecretCheck(secretsManagerReader(secretId, env)) : anyOrigin;
};
