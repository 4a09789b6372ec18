import { createHmac, timingSafeEqual } from 'node:crypto';
import { runTokenSeconds } from '../../schemas/run-tokens.ts';

/**
 * The run token (POST /runs/{jobId}/tokens): what a browser holds in place of an API key to read
 * one run, GET /runs/{jobId} and its event stream, as `?access_token=` (an `EventSource` cannot
 * send `Authorization`). Pure: the signing key is passed in (functions/store/server-secrets.ts).
 *
 * `wrt_1.<payload>.<sig>`: the payload is the base64url of `<jobId> <teamId> <keyId> <exp>`, `exp`
 * the end in unix seconds; `sig` the base64url HMAC-SHA256, under the key, of `wrt_1\n` and the
 * same four fields on lines of their own. Nothing is stored: the signature says this service issued
 * it for that run, team and key until `exp`; whether the key that made it still stands is read on
 * each use (functions/http/authenticate.ts), so revoking the key ends every token it made. The `wrt_`
 * prefix lets secret scanners find a leaked one; the `1` names the signed text and the key.
 */

const prefix = 'wrt_1';

/** What a token grants: reading `jobId` of `teamId`, as key `keyId` would, until `exp`. */
export interface RunTokenGrant {
  jobId: string;
  teamId: string;
  keyId: string;
  /** The end, unix seconds. */
  exp: number;
}

/** Longer than any token issued (three uuids and ten digits, encoded, and a tag). */
const maxTokenLength = 400;

/** A field of the payload: the ids this service makes (no space, no control character). */
const fieldPattern = /^[A-Za-z0-9_-]{1,64}$/;

const tagOf = (secret: Uint8Array, token: RunTokenGrant): string =>
  createHmac('sha256', secret)
    .update(`${prefix}\n${token.jobId}\n${token.teamId}\n${token.keyId}\n${token.exp}`)
    .digest()
    .toString('base64url');

/** The token's text. */
export const signRunToken = (secret: Uint8Array, token: RunTokenGrant): string => {
  const payload = Buffer.from(`${token.jobId} ${token.teamId} ${token.keyId} ${token.exp}`, 'utf8').toString(
    'base64url',
  );
  return `${prefix}.${payload}.${tagOf(secret, token)}`;
};

/** When a token made at `now` for `seconds` ends: whole seconds, so the `expiresAt` shown is the one checked. */
export const runTokenExpiry = (now: Date, seconds: number): number => Math.floor(now.getTime() / 1000) + seconds;

/**
 * What a token grants, when this service issued it and it has not ended at `now`; undefined for
 * anything else (altered, ended, ending further off than any token issued, not a token): the caller
 * answers all of them alike. The tag is compared in constant time.
 */
export const openRunToken = (secret: Uint8Array, text: string, now: Date): RunTokenGrant | undefined => {
  if (text.length > maxTokenLength) return undefined;
  const [head, payload, sig, ...rest] = text.split('.');
  if (head !== prefix || payload === undefined || sig === undefined || rest.length > 0) return undefined;
  if (!/^[A-Za-z0-9_-]+$/.test(payload)) return undefined;
  const decoded = Buffer.from(payload, 'base64url').toString('utf8');
  // Decoding skips stray characters: only the canonical encoding passes.
  if (Buffer.from(decoded, 'utf8').toString('base64url') !== payload) return undefined;
  const [jobId, teamId, keyId, expText, ...more] = decoded.split(' ');
  if (more.length > 0 || !expText || !/^[1-9][0-9]{0,11}$/.test(expText)) return undefined;
  if (![jobId, teamId, keyId].every((field) => field !== undefined && fieldPattern.test(field))) return undefined;
  const token = { jobId, teamId, keyId, exp: Number(expText) } as RunTokenGrant;
  const nowMs = now.getTime();
  // A minute of skew between the clocks of the functions that sign and check.
  if (token.exp * 1000 <= nowMs || token.exp * 1000 > nowMs + (runTokenSeconds.max + 60) * 1000) return undefined;
  const expected = Buffer.from(tagOf(secret, token), 'utf8');
  const given = Buffer.from(sig, 'utf8');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  return token;
};

/** The query parameter a run token travels in. */
export const accessTokenParameter = 'access_token';

/** `url` with the token as its `access_token` query parameter. */
export const withAccessToken = (url: string, token: string): string => {
  const parsed = new URL(url);
  parsed.searchParams.set(accessTokenParameter, token);
  return parsed.toString();
};
