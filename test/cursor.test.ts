/**
 * The list cursor (functions/domain/cursor.ts): a position signed for one list, team and filter set.
 * Pure: the signing key is passed in.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { type CursorScope, openCursor, signCursor } from '../functions/domain/cursor.ts';
import { InvalidCursorError } from '../functions/errors/table.ts';

const secret = randomBytes(32);
const scope: CursorScope = { list: 'runs', teamId: 'team-a', workflowId: null, status: null };
const position = {
  PK: 'RUN#0b7c8a4e-2f0a-4c56-9d7e-2d3c4b5a6f70',
  SK: 'RUN',
  GSI4PK: 'TEAM#team-a#RUNS',
  GSI4SK: '2026-11-24T12:00:00.000Z#0b7c8a4e-2f0a-4c56-9d7e-2d3c4b5a6f70',
};
const cursor = signCursor(secret, scope, position);

describe('a list cursor', () => {
  it('gives back the position it was signed with, for the same list, team and filters', () => {
    expect(openCursor(secret, { ...scope }, cursor)).toEqual(position);
    const filtered: CursorScope = { ...scope, workflowId: '4a6f0e38-5b1d-4d2e-8f3a-1c2b3d4e5f60', status: 'failed' };
    expect(openCursor(secret, filtered, signCursor(secret, filtered, position))).toEqual(position);
  });

  it('is opaque: URL-safe text that does not show the team', () => {
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(cursor).not.toContain('team-a');
  });

  it.each([
    ['another team', { ...scope, teamId: 'team-b' }],
    ['the other list', { ...scope, list: 'deferred-runs' }],
    ['a workflow filter added', { ...scope, workflowId: '4a6f0e38-5b1d-4d2e-8f3a-1c2b3d4e5f60' }],
    ['a status filter added', { ...scope, status: 'completed' }],
  ] as const)('is refused for %s', (_name, other) => {
    expect(() => openCursor(secret, other, cursor)).toThrow(InvalidCursorError);
  });

  it('is refused when a filter is removed', () => {
    const filtered: CursorScope = { ...scope, status: 'failed' };
    expect(() => openCursor(secret, scope, signCursor(secret, filtered, position))).toThrow(InvalidCursorError);
  });

  it('is refused under another signing key', () => {
    expect(() => openCursor(randomBytes(32), scope, cursor)).toThrow(InvalidCursorError);
  });

  it('is refused when any one character is changed', () => {
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    for (let i = 0; i < cursor.length; i++) {
      if (cursor[i] === '.') continue;
      const replacement = alphabet[(alphabet.indexOf(cursor[i] as string) + 1) % alphabet.length];
      const altered = `${cursor.slice(0, i)}${replacement}${cursor.slice(i + 1)}`;
      expect(() => openCursor(secret, scope, altered), `character ${i}`).toThrow(InvalidCursorError);
    }
  });

  it('is refused when it names another position, even one that decodes', () => {
    const [, tag] = cursor.split('.');
    const moved = Buffer.from(JSON.stringify({ ...position, GSI4PK: 'TEAM#team-b#RUNS' })).toString('base64url');
    expect(() => openCursor(secret, scope, `${moved}.${tag}`)).toThrow(InvalidCursorError);
  });

  it.each(['', '.', 'garbage', 'a.b.c', `${cursor}.`, `${cursor}x`, 'x'.repeat(5000), '%00'])(
    'refuses %j without reading it',
    (garbage) => {
      expect(() => openCursor(secret, scope, garbage)).toThrow(InvalidCursorError);
    },
  );

  it('refuses a correctly signed payload that is not a key of strings', () => {
    // Signed as the module signs (its documented tag), to reach the shape check behind the tag.
    const signed = (payload: string) => {
      const encoded = Buffer.from(payload).toString('base64url');
      const tag = createHmac('sha256', secret)
        .update(JSON.stringify(['v1', scope.list, scope.teamId, scope.workflowId, scope.status, encoded]))
        .digest('base64url');
      return `${encoded}.${tag}`;
    };
    expect(openCursor(secret, scope, signed(JSON.stringify(position)))).toEqual(position);
    for (const payload of ['[1,2]', '"text"', '{"PK":1}', 'null', 'not json']) {
      expect(() => openCursor(secret, scope, signed(payload)), payload).toThrow(InvalidCursorError);
    }
  });
});
