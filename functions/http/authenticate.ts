import type { Scope } from '../../platform/routes.ts';
import type { Deps } from '../deps.ts';
import { bearerToken, hashApiKey, isKeyUsable, isWellFormedApiKey } from '../domain/api-key.ts';
import { defaultRequestsPerMinute } from '../domain/rate-limit.ts';
import { RateLimitedError, ScopeNotPermittedError, UnauthorizedError } from '../errors/table.ts';
import { findApiKeyByHash } from '../store/api-keys.ts';
import type { ApiKeyItem } from '../store/items.ts';
import { admitRequest } from '../store/rate-counter.ts';

/** Who is calling, as every keyed handler sees it. */
export interface AuthContext {
  teamId: string;
  keyId: string;
  key: ApiKeyItem;
}

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
  const decision = await admitRequest(
    deps,
    key.keyId,
    now.getTime(),
    key.rateLimitPerMinute ?? defaultRequestsPerMinute,
  );
  if (!decision.allowed) throw new RateLimitedError(decision.retryAfterSeconds);
  if (key.scopes.length > 0 && !key.scopes.includes(scope)) throw new ScopeNotPermittedError(scope);
  return { teamId: key.teamId, keyId: key.keyId, key };
};
