/**
 * The run token's rules without I/O (functions/domain/run-token.ts), and what keeps it out of the
 * logs: the log lines' redaction (functions/observability/log-line.ts) and the HTTP API's access
 * log format (platform/routes.ts), which holds no query string.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { streamTiming, timingUntil } from '../functions/app/run-stream.ts';
import type { Deps } from '../functions/deps.ts';
import { openRunToken, runTokenExpiry, signRunToken, withAccessToken } from '../functions/domain/run-token.ts';
import { redactSecrets } from '../functions/observability/log-line.ts';
import { accessLogFields } from '../platform/routes.ts';
import { runTokenSeconds } from '../schemas/run-tokens.ts';

const secret = randomBytes(32);
const now = new Date('2026-12-07T12:00:00.000Z');
const grant = () => ({
  jobId: randomUUID(),
  teamId: randomUUID(),
  keyId: randomUUID(),
  exp: runTokenExpiry(now, runTokenSeconds.default),
});

describe('the run token', () => {
  it('opens to what it was made for until its end, and not at its end', () => {
    const made = grant();
    const token = signRunToken(secret, made);
    expect(token).toMatch(/^wrt_1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(openRunToken(secret, token, now)).toEqual(made);
    expect(openRunToken(secret, token, new Date(made.exp * 1000 - 1))).toEqual(made);
    expect(openRunToken(secret, token, new Date(made.exp * 1000))).toBeUndefined();
  });

  it('ends exactly the whole seconds asked for after it was made', () => {
    expect(runTokenExpiry(new Date('2026-12-07T12:00:00.900Z'), 60)).toBe(Date.parse('2026-12-07T12:01:00Z') / 1000);
  });

  it('refuses a token altered anywhere, signed with another key, or not a token at all', () => {
    const made = grant();
    const token = signRunToken(secret, made);
    const [head, payload, sig] = token.split('.') as [string, string, string];
    const other = signRunToken(secret, { ...made, jobId: randomUUID() });
    const otherPayload = other.split('.')[1];
    const flipped = (text: string, at: number) =>
      `${text.slice(0, at)}${text[at] === 'A' ? 'B' : 'A'}${text.slice(at + 1)}`;
    for (const bad of [
      `${head}.${otherPayload}.${sig}`,
      `${head}.${payload}.${flipped(sig, 5)}`,
      `${head}.${flipped(payload, 3)}.${sig}`,
      `wrt_2.${payload}.${sig}`,
      `${token}.x`,
      `${head}.${payload}`,
      `${head}.${payload}=.${sig}`,
      signRunToken(randomBytes(32), made),
      '',
      'wra_notatoken',
      `${token}${'A'.repeat(400)}`,
    ]) {
      expect(openRunToken(secret, bad, now), bad).toBeUndefined();
    }
  });

  it('refuses one ending further off than any token issued (a day and a minute of skew)', () => {
    const far = { ...grant(), exp: runTokenExpiry(now, runTokenSeconds.max + 61) };
    expect(openRunToken(secret, signRunToken(secret, far), now)).toBeUndefined();
    const longest = { ...grant(), exp: runTokenExpiry(now, runTokenSeconds.max) };
    expect(openRunToken(secret, signRunToken(secret, longest), now)).toEqual(longest);
  });

  it('travels as the access_token query parameter, beside any other', () => {
    const url = withAccessToken('https://api.example.com/api/v1/runs/abc?x=1', 'wrt_1.a.b');
    expect(new URL(url).searchParams.get('access_token')).toBe('wrt_1.a.b');
    expect(new URL(url).searchParams.get('x')).toBe('1');
  });
});

describe('the logs', () => {
  it('redact a run token, in a URL or alone, and an API key, in every string of a line', () => {
    const token = signRunToken(secret, grant());
    const key = `wra_${'a'.repeat(38)}`;
    const line = {
      message: `GET /api/v1/runs/x?access_token=${encodeURIComponent(token)}&output_cursor=c`,
      error: { message: `bad token ${token}`, nested: [`Bearer ${key}`] },
    };
    const written = JSON.stringify(line, redactSecrets);
    expect(written).not.toContain(token);
    expect(written).not.toContain(key);
    expect(JSON.parse(written)).toEqual({
      message: 'GET /api/v1/runs/x?access_token=[redacted]&output_cursor=c',
      error: { message: 'bad token wrt_1.[redacted]', nested: ['Bearer wra_[redacted]'] },
    });
  });

  it("of the HTTP API's access log hold no query string: only context variables, the path without its query", () => {
    const values = Object.values(accessLogFields);
    for (const value of values) expect(value).toMatch(/^\$context\.[A-Za-z.]+$/);
    // $context.path is the path alone (the query is in no $context variable of an HTTP API).
    expect(accessLogFields.path).toBe('$context.path');
    expect(values.some((value) => /query|request\.|rawQuery/i.test(value))).toBe(false);
  });
});

describe("a run token's stream", () => {
  it('ends by the token’s end when that comes before the cap, and at the cap otherwise', () => {
    const deps = { now: () => now } as Deps;
    const end = (ms: number) => new Date(now.getTime() + ms);
    expect(timingUntil(deps, undefined, undefined)).toBeUndefined();
    expect(timingUntil(deps, undefined, end(30_000))).toEqual({ ...streamTiming, capMs: 30_000 });
    expect(timingUntil(deps, undefined, end(3_600_000))).toEqual(streamTiming);
    const short = { ...streamTiming, capMs: 5_000 };
    expect(timingUntil(deps, short, end(30_000))).toEqual(short);
    expect(timingUntil(deps, short, end(-1))?.capMs).toBe(0);
  });
});
