import { createHash, randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';

/**
 * API key format: `wra_` + 32 base62 characters of randomness (about 190 bits) + 6 base62
 * characters of CRC-32 checksum. The prefix lets secret scanners find leaked keys; the checksum
 * lets us refuse a mistyped or made-up key without a database read.
 */
const apiKeyPrefix = 'wra_';
const bodyLength = 32;
const checksumLength = 6;
const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const keyPattern = new RegExp(`^${apiKeyPrefix}[0-9A-Za-z]{${bodyLength + checksumLength}}$`);

const toBase62 = (value: number, width: number): string => {
  let out = '';
  let rest = value;
  for (let i = 0; i < width; i++) {
    out = alphabet[rest % 62] + out;
    rest = Math.floor(rest / 62);
  }
  return out;
};

const checksumOf = (body: string): string => toBase62(crc32(body), checksumLength);

/** A new random key in the documented format. */
export const generateApiKey = (): string => {
  // Rejection sampling keeps every character uniform (256 is not a multiple of 62).
  let body = '';
  while (body.length < bodyLength) {
    for (const byte of randomBytes(48)) {
      if (byte < 248 && body.length < bodyLength) body += alphabet[byte % 62];
    }
  }
  return `${apiKeyPrefix}${body}${checksumOf(body)}`;
};

/** True when the key has the prefix, the length, the alphabet and a matching checksum. */
export const isWellFormedApiKey = (key: string): boolean => {
  if (!keyPattern.test(key)) return false;
  const body = key.slice(apiKeyPrefix.length, apiKeyPrefix.length + bodyLength);
  return key.slice(apiKeyPrefix.length + bodyLength) === checksumOf(body);
};

/** Whether a key may be used at `now`: not revoked and not past its expiry (ISO 8601, or null for never). */
export const isKeyUsable = (key: { revokedAt: string | null; expiresAt: string | null }, now: Date): boolean =>
  key.revokedAt === null && (key.expiresAt === null || Date.parse(key.expiresAt) > now.getTime());

/** Keys are stored and looked up only by this hash. */
export const hashApiKey = (key: string): string => createHash('sha256').update(key).digest('hex');

/** Extracts the key from `Authorization: Bearer <key>`; undefined when absent or not a bearer header. */
export const bearerToken = (header: string | undefined): string | undefined => {
  const match = /^Bearer +(\S+) *$/i.exec(header ?? '');
  return match?.[1];
};

/** The last characters of a key, safe to show in listings so an operator can tell keys apart. */
export const keyHint = (key: string): string => `${apiKeyPrefix}…${key.slice(-4)}`;
