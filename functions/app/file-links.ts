import { basePath, routeById } from '../../platform/routes.ts';
import type { Deps } from '../deps.ts';
import { fileLinkExpiresAt, fileRedirectSeconds } from '../domain/file-link-lifetime.ts';
import { type FileLinkParts, openFileLink, signFileLink } from '../domain/file-links.ts';
import { FileLinkNotFoundError } from '../errors/table.ts';
import { presignTeamFile } from '../store/files.ts';
import { checkingSecret, signingSecret } from '../store/server-secrets.ts';

/** Where links point: the stage's public base (`PUBLIC_BASE_URL`), without a trailing slash. */
const baseOf = (deps: Deps): string => {
  if (!deps.publicBaseUrl) throw new Error('no public base URL: file links need PUBLIC_BASE_URL');
  return deps.publicBaseUrl.replace(/\/+$/, '');
};

/**
 * A link to a team's stored file, working two hours from now (`expiresAt`), that needs no key: a
 * webhook receiver can fetch it. Made afresh on every read; nothing is stored.
 */
export const fileLinkFor = async (
  deps: Deps,
  teamId: string,
  objectKey: string,
): Promise<{ url: string; expiresAt: string }> => {
  const expiresAt = fileLinkExpiresAt(deps.now());
  const secret = await signingSecret(deps, 'fileLink');
  const parts = signFileLink(secret, { teamId, objectKey, exp: expiresAt.getTime() / 1000 });
  const path = routeById('GetFileLink').path.replace('{object}', parts.object);
  const query = new URLSearchParams({ exp: parts.exp, sig: parts.sig });
  return { url: `${baseOf(deps)}${basePath}${path}?${query}`, expiresAt: expiresAt.toISOString() };
};

/**
 * GET /file-links/{object} (our design): where a link this service made leads, while it works: a
 * storage URL of its object signed now, for a few minutes. Anything else (altered, ended, another
 * team's object, not a link) is FileLinkNotFoundError, alike. The object is not looked up: a link
 * whose object is gone leads to storage's own 403 (its signer may not list the bucket), and a link
 * never reveals more than it was given.
 */
export const openFileLinkTarget = async (deps: Deps, parts: FileLinkParts): Promise<string> => {
  const secret = await checkingSecret(deps, 'fileLink');
  const link = secret && openFileLink(secret, parts, deps.now());
  if (!link) throw new FileLinkNotFoundError();
  return presignTeamFile(deps, link.teamId, link.objectKey, fileRedirectSeconds);
};
