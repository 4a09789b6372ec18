/**
 * File links (functions/domain/file-links.ts): a team's object and an end, signed. Pure: the signing
 * key and the clock are passed in.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  fileLinkExpiresAt,
  fileLinkSkewSeconds,
  fileRedirectSeconds,
  fileUrlSeconds,
} from '../functions/domain/file-link-lifetime.ts';
import { type FileLink, openFileLink, signFileLink, teamOfObject } from '../functions/domain/file-links.ts';

const secret = randomBytes(32);
const teamId = '0b7c8a4e-2f0a-4c56-9d7e-2d3c4b5a6f70';
const otherTeam = '4a6f0e38-5b1d-4d2e-8f3a-1c2b3d4e5f60';
const objectKey = `teams/${teamId}/runs/5b000000-0000-4000-8000-000000000001/image/image.png`;
const madeAt = new Date('2026-11-24T12:00:00.400Z');
const exp = fileLinkExpiresAt(madeAt).getTime() / 1000;
const link: FileLink = { teamId, objectKey, exp };
const parts = signFileLink(secret, link);
const at = (ms: number) => new Date(madeAt.getTime() + ms);

describe('a file link', () => {
  it('opens to its team and object until its end, two hours from the read in whole seconds', () => {
    expect(new Date(exp * 1000).toISOString()).toBe('2026-11-24T14:00:00.000Z');
    expect(openFileLink(secret, parts, madeAt)).toEqual(link);
    expect(openFileLink(secret, parts, new Date(exp * 1000 - 1))).toEqual(link);
  });

  it('does not open at its end or after', () => {
    expect(openFileLink(secret, parts, new Date(exp * 1000))).toBeUndefined();
    expect(openFileLink(secret, parts, at(fileUrlSeconds * 1000 + 1000))).toBeUndefined();
  });

  it('is URL-safe text: the object base64url, the end in unix seconds, the signature named by its key', () => {
    expect(parts.object).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(Buffer.from(parts.object, 'base64url').toString('utf8')).toBe(objectKey);
    expect(parts.exp).toBe(String(exp));
    expect(parts.sig).toMatch(/^v1\.[A-Za-z0-9_-]{43}$/);
  });

  it('is refused under another key', () => {
    expect(openFileLink(randomBytes(32), parts, madeAt)).toBeUndefined();
  });

  it('is refused when any one character of its signature is changed', () => {
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    for (let i = 3; i < parts.sig.length; i++) {
      const replacement = alphabet[(alphabet.indexOf(parts.sig[i] as string) + 1) % alphabet.length];
      const sig = `${parts.sig.slice(0, i)}${replacement}${parts.sig.slice(i + 1)}`;
      expect(openFileLink(secret, { ...parts, sig }, madeAt), `character ${i}`).toBeUndefined();
    }
  });

  it.each([
    ['another object of the team', { object: Buffer.from(`${objectKey}x`).toString('base64url') }],
    ["another team's object", { object: Buffer.from(objectKey.replace(teamId, otherTeam)).toString('base64url') }],
    ['a later end', { exp: String(exp + 1) }],
    ['an earlier end', { exp: String(exp - 1) }],
    ['the end with a leading zero', { exp: `0${exp}` }],
    ['the object with padding', { object: `${parts.object}=` }],
    ['another signature version', { sig: parts.sig.replace(/^v1\./, 'v2.') }],
    ['no signature', { sig: '' }],
    ['no end', { exp: '' }],
    ['no object', { object: '' }],
  ])('is refused with %s', (_name, change) => {
    expect(openFileLink(secret, { ...parts, ...change }, madeAt)).toBeUndefined();
  });

  it('is refused for an end further off than any link issued, even signed (a stolen key cannot mint a lasting one)', () => {
    const far = { ...link, exp: exp + fileLinkSkewSeconds + 1 };
    expect(openFileLink(secret, signFileLink(secret, far), madeAt)).toBeUndefined();
    const within = { ...link, exp: exp + fileLinkSkewSeconds - 1 };
    expect(openFileLink(secret, signFileLink(secret, within), madeAt)).toEqual(within);
  });

  it('is refused for an object outside any team, or climbing out of one, even signed', () => {
    for (const key of ['runs/x.png', `teams/${teamId}`, `teams/${teamId}/`, `teams/${teamId}/../${otherTeam}/a.png`]) {
      const forged = { teamId, objectKey: key, exp };
      expect(openFileLink(secret, signFileLink(secret, forged), madeAt), key).toBeUndefined();
    }
  });

  it("names the team whose prefix holds the object, and the link's team is that one", () => {
    expect(teamOfObject(objectKey)).toBe(teamId);
    expect(teamOfObject('teams//a.png')).toBeUndefined();
    // Signed for another team than its prefix's: the check binds the prefix's team, so it fails.
    const mismatched = signFileLink(secret, { teamId: otherTeam, objectKey, exp });
    expect(openFileLink(secret, mismatched, madeAt)).toBeUndefined();
  });

  it('redirects to a storage URL that lives minutes, not hours', () => {
    expect(fileRedirectSeconds).toBe(300);
  });
});
