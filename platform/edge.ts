/**
 * What the edge (CloudFront, AWS WAF and the HTTP API's route throttles) knows about the routes and
 * the service's answers. Pure data and rules, read by the CDK app (`lib/edge-stack.ts`,
 * `lib/route-throttles.ts`); `test/cdk-edge.test.ts` holds them to the functions' own limits and
 * error bodies, which `lib/` may not import.
 */
import { basePath, type Route } from './routes.ts';

/**
 * How a route is reached, for its throttle and its WAF rate rule:
 * - `anonymous`: no key and no signature (the docs page, its assets, the OpenAPI document, the node-type reference): anyone
 *   may call it, so it gets the lowest limits;
 * - `signed`: no key, but an HMAC its function checks (file links, provider webhooks); their traffic
 *   follows the runs, so they share the keyed routes' looser limits;
 * - `keyed`: a bearer API key, each limited to 60 a minute by the functions.
 */
export type TrafficClass = 'anonymous' | 'signed' | 'keyed';

/** The keyless routes whose requests carry a signature their function checks. */
export const signedRouteIds: readonly string[] = ['GetFileLink', 'ProviderWebhook'];

/** A route's traffic class; a new keyless route is `anonymous` (the strictest) until listed above. */
export const trafficClassOf = (route: Pick<Route, 'id' | 'scope'>): TrafficClass =>
  route.scope !== null ? 'keyed' : signedRouteIds.includes(route.id) ? 'signed' : 'anonymous';

/**
 * The largest request body any route accepts: POST /workflows' 256 KiB
 * (`functions/http/workflow-request.ts`; the run starts take 64 KiB). The WAF answers a larger
 * Content-Length with the service's own 413 before it reaches API Gateway (and Lambda's 6 MB
 * invoke limit); the function still answers its own, smaller, limit.
 */
export const largestBodyBytes = 256 * 1024;

/** The 413 body of `PayloadTooLargeError` (`schemas/errors.ts`) for `largestBodyBytes`. */
export const payloadTooLargeBody = (maxBytes: number): string =>
  JSON.stringify({ error: `Request body too large: at most ${maxBytes} bytes` });

/** The 429 body of `RateLimitExceededError` (`schemas/errors.ts`), which the WAF's rate rules answer too. */
export const rateLimitedBody = JSON.stringify({ error: 'Rate limit exceeded' });

/**
 * A regular expression (PCRE, as AWS WAF reads it) matching exactly the decimal integers above `n`
 * (leading zeros allowed): WAF compares header values as text, never as numbers, so "above 262144"
 * is spelled digit by digit.
 */
export const greaterThanPattern = (n: number): string => {
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`greaterThanPattern needs a whole number, got ${n}`);
  const digits = String(n);
  // Any number with more digits is larger.
  const alternatives = [`[1-9][0-9]{${digits.length},}`];
  // Same length: equal up to position i, then a larger digit there, then anything.
  for (let i = 0; i < digits.length; i++) {
    const digit = Number(digits[i]);
    if (digit === 9) continue;
    const rest = digits.length - i - 1;
    const larger = digit === 8 ? '9' : `[${digit + 1}-9]`;
    // The first digit of a same-length number is never 0, so no leading-zero case arises here.
    alternatives.push(`${digits.slice(0, i)}${larger}${rest > 0 ? `[0-9]{${rest}}` : ''}`);
  }
  return `^0*(?:${alternatives.join('|')})$`;
};

/**
 * The paths CloudFront caches, honouring the function's own Cache-Control (a year for a versioned
 * docs asset, five minutes otherwise; the OpenAPI document sends none, so it is not kept until it
 * does). Everything else goes to the API uncached.
 */
export const edgeCachedPaths: readonly string[] = [`${basePath}/docs/assets/*`, `${basePath}/openapi.json`];

/** A route's full path up to its first parameter: what a WAF STARTS_WITH match on the URI path names. */
export const pathPrefixOf = (route: Pick<Route, 'path'>): string =>
  `${basePath}${route.path.replace(/\{[^}]+\}.*$/, '')}`;

/** The path prefixes of the anonymous routes, as the WAF's stricter rate rule scopes down to them. */
export const anonymousPathPrefixes = (all: readonly Route[]): string[] =>
  [...new Set(all.filter((route) => trafficClassOf(route) === 'anonymous').map(pathPrefixOf))].sort();

/**
 * The routes whose body is not one of the service's JSON requests, so `largestBodyBytes` does not
 * bound it: a provider's webhook carries the provider's own prediction record (its logs included),
 * which its function reads whole. The WAF's size rule leaves them to API Gateway's limit.
 */
export const unboundedBodyRouteIds: readonly string[] = ['ProviderWebhook'];

/** API Gateway's route key of a route, as route settings name it. */
export const routeKeyOf = (route: Pick<Route, 'method' | 'path'>): string => `${route.method} ${basePath}${route.path}`;

/**
 * The header CloudFront adds to every request it sends to the stage's origins (the API's custom
 * domain, the stream's function URL), with the value of the stack's origin secret: a function the
 * edge fronts answers a request without it as if the route did not exist (functions/http/origin-check.ts).
 */
export const originHeader = 'x-origin-verify';
