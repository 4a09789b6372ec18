import type { Scope } from '../../platform/routes.ts';
import type { Deps } from '../deps.ts';
import { bearerToken, hashApiKey, isKeyUsable, isWellFormedApiKey } from '../domain/api-key.ts';
import { defaultRequestsPerMinute } from '../domain/rate-limit.ts';
import { openRunToken } from '../domain/run-token.ts';
import { RateLimitedError, RunNotFoundError, ScopeNotPermittedError, UnauthorizedError } from '../errors/table.ts';
import { findApiKeyByHash, findApiKeyById } from '../store/api-keys.ts';
import type { ApiKeyItem } from '../store/items/api-keys.ts';
import { admitRequest } from '../store/rate-counter.ts';
import { checkingSecret } from '../store/server-secrets.ts';

/** Who is calling, as every keyed handler sees it. */
export interface AuthContext {
  teamId: string;
  keyId: string;
  key: ApiKeyItem;
  /** Set when a run token stood in for the key: the one run it reads, and when it ends. */
  runToken?: { jobId: string; expiresAt: Date };
}

/** The key's rate limit, then its scope: what a request counts and may do once its key is known. */
const admitKey = async (deps: Deps, key: ApiKeyItem, now: Date, scope: Scope): Promise<void> => {
  const decision = await admitRequest(
    deps,
    key.keyId,
    now.getTime(),
    key.rateLimitPerMinute ?? defaultRequestsPerMinute,
  );
  if (!decision.allowed) throw new RateLimitedError(decision.retryAfterSeconds);
  if (key.scopes.length > 0 && !key.scopes.includes(scope)) throw new ScopeNotPermittedError(scope);
};

/**
 * Auth, then rate limit, then scope (DESIGN.md): a malformed key is refused before any read; an
 * unknown, revoked or expired key gets the same 401 (`invalid`), so no answer tells a valid key; a request the rate limit accepts
 * counts against it even if its scope then fails, so probing scopes is throttled too (a request
 * the rate limit refuses counts nowhere).
 */
export const authenticate = async (
  deps: Deps,
  authorization: string | undefined,
  scope: Scope,
): Promise<AuthContext> => {
  if (!authorization?.trim()) throw new UnauthorizedError('missing');
  const token = bearerToken(authorization);
  if (!token || !isWellFormedApiKey(token)) throw new UnauthorizedError('malformed');
  const key = await findApiKeyByHash(deps, hashApiKey(token));
  const now = deps.now();
  if (!key || !isKeyUsable(key, now)) throw new UnauthorizedError('invalid');
  await admitKey(deps, key, now, scope);
  return { teamId: key.teamId, keyId: key.keyId, key };
};

/**
 * A run token in place of the key (`?access_token=`, on the routes that accept one): its signature
 * and end are checked before any read but the signing key's; then the key that made it must still
 * stand (not revoked, not expired: read strongly consistent, so a revocation ends every token at
 * once), and the request counts against that key's rate limit and needs its scope, as the key's own
 * would. An altered, ended or unknown token, and one whose key is gone, get the key's 401
 * (`invalid`). A token reads only its own run: any other `jobId` is the 404 of a run that does not
 * exist, after the same checks, so it tells nothing more.
 */
export const authenticateRunToken = async (
  deps: Deps,
  text: string,
  jobId: string,
  scope: Scope,
): Promise<AuthContext> => {
  const now = deps.now();
  const secret = await checkingSecret(deps, 'runToken');
  const token = secret && openRunToken(secret, text, now);
  if (!token) throw new UnauthorizedError('invalid');
  const key = await findApiKeyById(deps, token.keyId);
  if (!key || key.teamId !== token.teamId || !isKeyUsable(key, now)) throw new UnauthorizedError('invalid');
  await admitKey(deps, key, now, scope);
  if (token.jobId !== jobId) throw new RunNotFoundError(jobId);
  return {
    teamId: key.teamId,
    keyId: key.keyId,
    key,
    runToken: { jobId: token.jobId, expiresAt: new Date(token.exp * 1000) },
  };
};
