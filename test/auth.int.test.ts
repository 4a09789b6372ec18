import { describe, expect, it } from 'vitest';
import { generateApiKey } from '../functions/domain/api-key.ts';
import { revokeApiKey } from '../functions/store/api-keys.ts';
import { addKey, call, seedTeam, stackPerFile } from './support/stack.ts';

const { stack } = stackPerFile();

describe('API keys (spec section 5)', () => {
  it('refuses a missing, malformed, unknown, revoked or expired key: the contract body, a reason that tells no valid key apart, WWW-Authenticate', async () => {
    const team = await seedTeam(stack.deps);
    const revoked = await addKey(stack.deps, team.teamId);
    await revokeApiKey(stack.deps, revoked.keyId);
    const expired = await addKey(stack.deps, team.teamId, { expiresAt: new Date(Date.now() - 1000).toISOString() });
    // Well formed (its checksum right) but never issued; a changed character breaks the checksum.
    const unknown = generateApiKey();
    const checksumBroken = `${team.key.slice(0, 4)}${'A'.repeat(32)}${team.key.slice(-6)}`;
    const candidates: [Record<string, string>, string][] = [
      [{}, 'missing'],
      [{ authorization: '' }, 'missing'],
      [{ authorization: 'Bearer not-a-key' }, 'malformed'],
      [{ authorization: `Bearer ${team.key}x` }, 'malformed'],
      [{ authorization: `Basic ${team.key}` }, 'malformed'],
      [{ authorization: `Bearer ${checksumBroken}` }, 'malformed'],
      [{ authorization: `Bearer ${unknown}` }, 'invalid'],
      [{ authorization: `Bearer ${revoked.key}` }, 'invalid'],
      [{ authorization: `Bearer ${expired.key}` }, 'invalid'],
    ];
    for (const [headers, reason] of candidates) {
      const response = await call(stack.baseUrl, '/workflows', { headers });
      expect(response.status, JSON.stringify(headers)).toBe(401);
      expect(response.body).toEqual({ error: 'Unauthorized', reason });
      expect(response.headers.get('www-authenticate')).toBe(
        reason === 'missing' ? 'Bearer' : 'Bearer error="invalid_token"',
      );
    }
  });

  it('stops accepting a key on the very next request after it is revoked', async () => {
    const team = await seedTeam(stack.deps);
    expect((await call(stack.baseUrl, '/workflows', { key: team.key })).status).toBe(200);
    await revokeApiKey(stack.deps, team.keyId);
    expect((await call(stack.baseUrl, '/workflows', { key: team.key })).status).toBe(401);
  });

  it('accepts a key whose expiry is in the future', async () => {
    const team = await seedTeam(stack.deps);
    const later = await addKey(stack.deps, team.teamId, { expiresAt: new Date(Date.now() + 60_000).toISOString() });
    expect((await call(stack.baseUrl, '/workflows', { key: later.key })).status).toBe(200);
  });

  it('answers 403 for a scope the key lacks, and a key without scopes has all four', async () => {
    const team = await seedTeam(stack.deps);
    const writeOnly = await addKey(stack.deps, team.teamId, { scopes: ['workflows:write', 'runs:read'] });
    const refused = await call(stack.baseUrl, '/workflows', { key: writeOnly.key });
    expect(refused).toMatchObject({ status: 403, body: { error: 'Scope not permitted for this key' } });
    const reader = await addKey(stack.deps, team.teamId, { scopes: ['workflows:read'] });
    expect((await call(stack.baseUrl, '/workflows', { key: reader.key })).status).toBe(200);
    expect((await call(stack.baseUrl, '/workflows', { key: team.key })).status).toBe(200);
  });

  it('stores no secret: the key is found only through its SHA-256', async () => {
    const team = await seedTeam(stack.deps);
    const { ScanCommand } = await import('@aws-sdk/lib-dynamodb');
    const { Items = [] } = await stack.deps.ddb.send(new ScanCommand({ TableName: stack.deps.tableName }));
    expect(JSON.stringify(Items)).not.toContain(team.key);
    expect(JSON.stringify(Items)).not.toContain(team.key.slice(4, 36));
  });
});
