import { createHmac, timingSafeEqual } from 'node:crypto';
import { fileLinkSkewSeconds, fileUrlSeconds } from './file-link-lifetime.ts';

/**
 * The file links the API gives (every file `url` of a run, its webhook body included): our own URL,
 * `{base}/file-links/{object}?exp=…&sig=…`, which answers a redirect to the stored object. Pure:
 * the signing key is passed in (functions/store/server-secrets.ts keeps it).
 *
 * `object` is the object's key in base64url; the key lies under `teams/<team>/`, which names the
 * team. `exp` is the link's end in unix seconds. `sig` is `v1.` then the base64url HMAC-SHA256,
 * under the key, of `v1\n<team>\n<object key>\n<exp>`: so a link altered in its object (another
 * team's, another file), its end or its tag fails, and only what this service issued opens. The
 * `v1.` names the key: a second key can sign beside the first while old links run out.
 */

/** The version of the signed text and the key's name; the prefix of every `sig`. */
const version = 'v1';

/** What a link names: the team, the object of the team's, and its end. */
export interface FileLink {
  teamId: string;
  objectKey: string;
  /** The link's end, unix seconds. */
  exp: number;
}

/** A link as it arrives: its path parameter and query, unchecked. */
export interface FileLinkParts {
  object: string;
  exp: string;
  sig: string;
}

/** Longer than any object key the service writes (a team, a run, a node and a file name). */
const maxObjectKeyLength = 1024;

/** The team whose prefix holds `objectKey` (`teams/<team>/…`), if it is a plain key under one. */
export const teamOfObject = (objectKey: string): string | undefined => {
  const match = /^teams\/([^/]+)\/./.exec(objectKey);
  if (!match || objectKey.split('/').some((part) => part === '..' || part === '.')) return undefined;
  return match[1];
};

const tagOf = (secret: Uint8Array, link: FileLink): string =>
  createHmac('sha256', secret)
    .update(`${version}\n${link.teamId}\n${link.objectKey}\n${link.exp}`)
    .digest()
    .toString('base64url');

/** The link's parts for `link`: the object's key in base64url, its end, its signature. */
export const signFileLink = (secret: Uint8Array, link: FileLink): FileLinkParts => ({
  object: Buffer.from(link.objectKey, 'utf8').toString('base64url'),
  exp: String(link.exp),
  sig: `${version}.${tagOf(secret, link)}`,
});

/** `object` decoded, only when it is canonical base64url (decoding skips stray characters; they must not pass). */
const objectKeyOf = (object: string): string | undefined => {
  if (!/^[A-Za-z0-9_-]+$/.test(object) || object.length > Math.ceil((maxObjectKeyLength * 4) / 3)) return undefined;
  const key = Buffer.from(object, 'base64url').toString('utf8');
  return Buffer.from(key, 'utf8').toString('base64url') === object ? key : undefined;
};

/**
 * What a link names, when this service issued it and it has not ended at `now`; undefined for
 * anything else (altered, ended, ending further off than any link issued, not a link): the caller
 * answers all of them alike. The tag is compared in constant time.
 */
export const openFileLink = (secret: Uint8Array, parts: FileLinkParts, now: Date): FileLink | undefined => {
  const objectKey = objectKeyOf(parts.object);
  const teamId = objectKey === undefined ? undefined : teamOfObject(objectKey);
  if (objectKey === undefined || teamId === undefined) return undefined;
  if (!/^[1-9][0-9]{0,11}$/.test(parts.exp)) return undefined;
  const exp = Number(parts.exp);
  const nowMs = now.getTime();
  if (exp * 1000 <= nowMs || exp * 1000 > nowMs + (fileUrlSeconds + fileLinkSkewSeconds) * 1000) return undefined;
  const link = { teamId, objectKey, exp };
  // Compared as text: base64url decoding ignores stray characters, and a tag altered in any character must not pass.
  const expected = Buffer.from(`${version}.${tagOf(secret, link)}`, 'utf8');
  const given = Buffer.from(parts.sig, 'utf8');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  return link;
};
