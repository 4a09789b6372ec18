import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bearerToken, generateApiKey, hashApiKey, isWellFormedApiKey, keyHint } from '../functions/domain/api-key.ts';

const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

describe('API key format', () => {
  it('generates keys with the prefix, 38 base62 characters and a valid checksum', () => {
    for (let i = 0; i < 200; i++) {
      const key = generateApiKey();
      expect(key).toMatch(/^wra_[0-9A-Za-z]{38}$/);
      expect(isWellFormedApiKey(key)).toBe(true);
    }
  });

  it('never repeats a key', () => {
    const keys = new Set(Array.from({ length: 2000 }, generateApiKey));
    expect(keys.size).toBe(2000);
  });

  it('refuses any key with one character changed (the checksum catches it)', () => {
    fc.assert(
      fc.property(fc.nat(41), fc.constantFrom(...alphabet), (position, replacement) => {
        const key = generateApiKey();
        const index = 4 + (position % 38);
        fc.pre(key[index] !== replacement);
        const mutated = key.slice(0, index) + replacement + key.slice(index + 1);
        expect(isWellFormedApiKey(mutated)).toBe(false);
      }),
      { numRuns: 500 },
    );
  });

  it('refuses strings of the wrong shape', () => {
    fc.assert(
      fc.property(fc.string(), (text) => {
        fc.pre(!text.startsWith('wra_'));
        expect(isWellFormedApiKey(text)).toBe(false);
      }),
    );
    expect(isWellFormedApiKey(`${generateApiKey()}0`)).toBe(false);
    expect(isWellFormedApiKey(generateApiKey().replace('wra_', 'wrb_'))).toBe(false);
  });

  it('hashes with SHA-256 hex and shows only the last four characters', () => {
    const key = generateApiKey();
    expect(hashApiKey(key)).toMatch(/^[0-9a-f]{64}$/);
    expect(keyHint(key)).toBe(`wra_…${key.slice(-4)}`);
  });

  it('reads the token of a Bearer header only', () => {
    expect(bearerToken('Bearer abc')).toBe('abc');
    expect(bearerToken('bearer abc')).toBe('abc');
    expect(bearerToken('Basic abc')).toBeUndefined();
    expect(bearerToken(undefined)).toBeUndefined();
    expect(bearerToken('Bearer a b')).toBeUndefined();
  });
});
