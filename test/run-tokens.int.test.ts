/**
 * Run tokens through the local server as `npm start` serves it (the same handlers Lambda runs):
 * POST /runs/{jobId}/tokens, and `?access_token=` in place of the key on GET /runs/{jobId} and its
 * event stream, with their CORS answers and preflights; what the token may not do (another run,
 * another route, past its end, after its key's revocation); and that it never reaches a log line.
 * The clock is the only edge moved (`now`), to reach a token's end.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { logger } from '../functions/observability/logger.ts';
import { revokeApiKey } from '../functions/store/api-keys.ts';
import { startLocalApi } from '../local/api-gateway.ts';
import { createClient } from '../packages/client/src/index.ts';
import { basePath, routes } from '../platform/routes.ts';
import { runCli } from './support/cli.ts';
import { api, faultyDeps } from './support/runs.ts';
import {
  addKey,
  call,
  createWorkflow,
  type SeededTeam,
  seedUnthrottledTeam,
  stackPerFile,
  startRunOk,
  testRouteTimeoutMs,
} from './support/stack.ts';

let skewMs = 0;
const { stack, closers } = stackPerFile({ now: () => new Date(Date.now() + skewMs) });

afterEach(() => {
  skewMs = 0;
});

type Made = { token: string; expiresAt: string; links: { run: string; events: string } };

const startRun = async (team: SeededTeam) => {
  const workflowId = await createWorkflow(stack, team, undefined, `Tokened ${randomUUID().slice(0, 8)}`);
  return startRunOk(stack, team.key, workflowId);
};

const makeToken = async (key: string, jobId: string, body?: unknown): Promise<Made> => {
  const made = await api(stack.baseUrl, 'POST', `/runs/${jobId}/tokens`, {
    key,
    ...(body === undefined ? {} : { body }),
  });
  expect(made.status, JSON.stringify(made.body)).toBe(201);
  return made.body as unknown as Made;
};

/** GET with the token and no key, as a page does. */
const withToken = (path: string, token: string, init: RequestInit = {}) =>
  fetch(`${stack.baseUrl}${path}?access_token=${encodeURIComponent(token)}`, init);

/** The head of an event stream, its body left unread. */
const streamHead = async (url: string, headers: Record<string, string> = {}) => {
  const controller = new AbortController();
  const response = await fetch(url, {
    headers: { accept: 'text/event-stream', ...headers },
    signal: controller.signal,
  });
  const head = { status: response.status, headers: response.headers };
  const text = response.headers.get('content-type')?.startsWith('application/json') ? await response.json() : undefined;
  controller.abort();
  return { ...head, body: text as Record<string, unknown> | undefined };
};

describe('POST /runs/{jobId}/tokens', () => {
  it('answers 201 with a token, its end (an hour by default) and the two links that read the run with no key', async () => {
    const team = await seedUnthrottledTeam(stack.deps);
    const jobId = await startRun(team);
    const before = Math.floor(Date.now() / 1000);
    const made = await makeToken(team.key, jobId);
    const end = Date.parse(made.expiresAt) / 1000;
    expect(end).toBeGreaterThanOrEqual(before + 3600);
    expect(end).toBeLessThanOrEqual(Math.floor(Date.now() / 1000) + 3600);
    expect(made.links.run).toBe(`${stack.baseUrl}/runs/${jobId}?access_token=${made.token}`);
    expect(made.links.events).toBe(`${stack.baseUrl}/runs/${jobId}/events?access_token=${made.token}`);

    const read = await fetch(made.links.run);
    expect(read.status).toBe(200);
    expect(read.headers.get('access-control-allow-origin')).toBe('*');
    const keyed = await call(stack.baseUrl, `/runs/${jobId}`, { key: team.key });
    expect(((await read.json()) as { jobId: string }).jobId).toBe(keyed.body.jobId);
    // A key's answer carries no CORS header: keys belong on servers.
    expect(keyed.headers.get('access-control-allow-origin')).toBeNull();

    const stream = await streamHead(made.links.events);
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toBe('text/event-stream');
    expect(stream.headers.get('access-control-allow-origin')).toBe('*');
  });

  it('takes expiresInSeconds from 60 to 86,400, whole seconds, and refuses anything else with 400', async () => {
    const team = await seedUnthrottledTeam(stack.deps);
    const jobId = await startRun(team);
    for (const seconds of [60, 86_400]) {
      const made = await makeToken(team.key, jobId, { expiresInSeconds: seconds });
      const left = Date.parse(made.expiresAt) / 1000 - Date.now() / 1000;
      expect(left).toBeGreaterThan(seconds - 30);
      expect(left).toBeLessThanOrEqual(seconds);
    }
    for (const expiresInSeconds of [59, 86_401, 90.5, '600', null, -1]) {
      const refused = await api(stack.baseUrl, 'POST', `/runs/${jobId}/tokens`, {
        key: team.key,
        body: { expiresInSeconds },
      });
      expect(refused.status, String(expiresInSeconds)).toBe(400);
    }
  });

  it("answers another team's run, and a run of a workflow the key is not limited to, as a missing one (404)", async () => {
    const team = await seedUnthrottledTeam(stack.deps);
    const other = await seedUnthrottledTeam(stack.deps);
    const jobId = await startRun(team);
    const missing = await api(stack.baseUrl, 'POST', `/runs/${randomUUID()}/tokens`, { key: team.key });
    expect(missing.status).toBe(404);
    const foreign = await api(stack.baseUrl, 'POST', `/runs/${jobId}/tokens`, { key: other.key });
    expect(foreign).toMatchObject({ status: 404, body: missing.body });
    const limited = await addKey(stack.deps, team.teamId, { workflowIds: [randomUUID()], rateLimitPerMinute: 100_000 });
    expect((await api(stack.baseUrl, 'POST', `/runs/${jobId}/tokens`, { key: limited.key })).status).toBe(404);
  });
});

describe('a run token', () => {
  it("reads only its own run: another run's id, the team's own included, is the 404 of a run that does not exist", async () => {
    const team = await seedUnthrottledTeam(stack.deps);
    const [mine, sibling] = [await startRun(team), await startRun(team)];
    const { token } = await makeToken(team.key, mine);
    const unknown = await call(stack.baseUrl, `/runs/${randomUUID()}`, { key: team.key });
    expect(unknown.status).toBe(404);
    for (const jobId of [sibling, randomUUID(), 'not-a-uuid']) {
      const read = await withToken(`/runs/${jobId}`, token);
      expect(read.status, jobId).toBe(404);
      expect(await read.json()).toEqual(unknown.body);
      expect(read.headers.get('access-control-allow-origin')).toBe('*');
      const stream = await streamHead(`${stack.baseUrl}/runs/${jobId}/events?access_token=${token}`);
      expect(stream.status, jobId).toBe(404);
      expect(stream.body).toEqual(unknown.body);
    }
  });

  it('is refused on every other route: there it is no key (401 missing), and as a bearer key it is malformed', async () => {
    const team = await seedUnthrottledTeam(stack.deps);
    const jobId = await startRun(team);
    const { token } = await makeToken(team.key, jobId);
    const others = routes.filter((route) => route.scope !== null && !route.runToken);
    expect(others.length).toBeGreaterThan(10);
    for (const route of others) {
      const path = route.path.replace('{jobId}', jobId).replace(/\{\w+\}/g, () => randomUUID());
      const answer = await fetch(`${stack.baseUrl}${path}?access_token=${token}`, {
        method: route.method,
        ...(route.method === 'POST' ? { headers: { 'content-type': 'application/json' }, body: '{}' } : {}),
      });
      expect(answer.status, `${route.method} ${route.path}`).toBe(401);
      expect(await answer.json()).toMatchObject({ reason: 'missing' });
      expect(answer.headers.get('access-control-allow-origin')).toBeNull();
    }
    const asKey = await call(stack.baseUrl, `/runs/${jobId}`, { key: token });
    expect(asKey).toMatchObject({ status: 401, body: { reason: 'malformed' } });
    // Nor does it make tokens: that takes the key.
    const chained = await withToken(`/runs/${jobId}/tokens`, token, { method: 'POST' });
    expect(chained.status).toBe(401);
  });

  it('dies at expiresAt: then GET and the stream answer 401 (invalid), with the CORS header the page needs to read it', async () => {
    const team = await seedUnthrottledTeam(stack.deps);
    const jobId = await startRun(team);
    const made = await makeToken(team.key, jobId, { expiresInSeconds: 60 });
    expect((await fetch(made.links.run)).status).toBe(200);
    skewMs = Date.parse(made.expiresAt) - Date.now();
    const read = await fetch(made.links.run);
    expect(read.status).toBe(401);
    expect(await read.json()).toMatchObject({ reason: 'invalid' });
    expect(read.headers.get('access-control-allow-origin')).toBe('*');
    const stream = await streamHead(made.links.events);
    expect(stream.status).toBe(401);
    expect(stream.headers.get('access-control-allow-origin')).toBe('*');
  });

  it('dies when the key that made it is revoked, and lives on when another key of the team is', async () => {
    const team = await seedUnthrottledTeam(stack.deps);
    const jobId = await startRun(team);
    const second = await addKey(stack.deps, team.teamId, { rateLimitPerMinute: 100_000 });
    const byTeamKey = await makeToken(team.key, jobId);
    const bySecond = await makeToken(second.key, jobId);
    expect((await fetch(bySecond.links.run)).status).toBe(200);
    expect(await revokeApiKey(stack.deps, second.keyId)).toBe(true);
    const read = await fetch(bySecond.links.run);
    expect(read.status).toBe(401);
    expect(await read.json()).toMatchObject({ reason: 'invalid' });
    expect((await streamHead(bySecond.links.events)).status).toBe(401);
    expect((await fetch(byTeamKey.links.run)).status).toBe(200);
  });

  it("counts against the making key's rate limit: past it, 429 with Retry-After the page may read", async () => {
    const team = await seedUnthrottledTeam(stack.deps);
    const jobId = await startRun(team);
    const narrow = await addKey(stack.deps, team.teamId, { rateLimitPerMinute: 2 });
    const made = await makeToken(narrow.key, jobId);
    expect((await fetch(made.links.run)).status).toBe(200);
    const refused = await fetch(made.links.run);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(refused.headers.get('access-control-allow-origin')).toBe('*');
    expect(refused.headers.get('access-control-expose-headers')).toContain('retry-after');
  });

  it('may ask GET /runs/{jobId} to wait (Prefer: wait), and the page may read Preference-Applied', async () => {
    const team = await seedUnthrottledTeam(stack.deps);
    const jobId = await startRun(team);
    const made = await makeToken(team.key, jobId);
    const read = await fetch(made.links.run, { headers: { prefer: 'wait=1' } });
    expect(read.status).toBe(200);
    expect(read.headers.get('preference-applied')).toBe('wait=1');
    expect(read.headers.get('access-control-expose-headers')).toContain('preference-applied');
  });

  it('answers the CORS preflight of GET /runs/{jobId} and of its stream, and no other route’s', async () => {
    const team = await seedUnthrottledTeam(stack.deps);
    const jobId = await startRun(team);
    const { token } = await makeToken(team.key, jobId);
    const preflight = {
      method: 'OPTIONS',
      headers: {
        origin: 'https://app.example.com',
        'access-control-request-method': 'GET',
        'access-control-request-headers': 'last-event-id',
      },
    };
    for (const path of [`/runs/${jobId}`, `/runs/${jobId}/events`]) {
      const answer = await withToken(path, token, preflight);
      expect(answer.status, path).toBe(204);
      expect(answer.headers.get('access-control-allow-origin')).toBe('*');
      expect(answer.headers.get('access-control-allow-methods')).toBe('GET');
      expect(answer.headers.get('access-control-allow-headers')).toContain('last-event-id');
      // A preflight carries no credential: it is answered without the token too.
      expect((await fetch(`${stack.baseUrl}${path}`, preflight)).status, path).toBe(204);
    }
    const cancel = await fetch(`${stack.baseUrl}/runs/${jobId}/cancel`, preflight);
    expect(cancel.status).toBe(404);
  });

  it('never reaches a log line, not even in a failure that quotes the request', async () => {
    const team = await seedUnthrottledTeam(stack.deps);
    const jobId = await startRun(team);
    const made = await makeToken(team.key, jobId);
    // A store failure whose message quotes the address it was reading for (as a client error may).
    const failing = await startLocalApi({
      deps: faultyDeps(
        stack,
        {
          failDynamo: (command) => command === 'QueryCommand',
          error: () => {
            // The invocation set the configured level (SILENT in tests) when it began: every line from here on.
            logger.setLogLevel('DEBUG');
            return new Error(`reading ${made.links.run}`);
          },
        },
        { now: stack.deps.now, publicBaseUrl: stack.deps.publicBaseUrl },
      ),
      port: 0,
      host: '127.0.0.1',
      timeoutMs: testRouteTimeoutMs,
    });
    closers.push(() => failing.close());
    const written: string[] = [];
    const capture = (chunk: unknown) => {
      written.push(String(chunk));
      return true;
    };
    vi.spyOn(process.stdout, 'write').mockImplementation(capture);
    vi.spyOn(process.stderr, 'write').mockImplementation(capture);
    try {
      const failed = await fetch(`${failing.baseUrl}/runs/${jobId}?access_token=${made.token}`);
      expect(failed.status).toBe(500);
      expect((await fetch(made.links.run)).status).toBe(200);
      expect((await fetch(`${stack.baseUrl}/runs/${randomUUID()}?access_token=${made.token}`)).status).toBe(404);
      expect((await fetch(`${stack.baseUrl}/runs/${jobId}?access_token=${made.token}x`)).status).toBe(401);
    } finally {
      logger.setLogLevel('SILENT');
      vi.restoreAllMocks();
    }
    const lines = written.join('');
    // The failure was logged, with the address it quoted, the token redacted.
    expect(lines).toContain('request failed');
    expect(lines).toContain(`/runs/${jobId}?access_token=[redacted]`);
    expect(lines).not.toContain(made.token);
    expect(lines).not.toContain(made.token.split('.')[2]);
  });
});

describe('the client and the CLI', () => {
  it('client.runToken and `run token` make a token whose links read the run', async () => {
    const team = await seedUnthrottledTeam(stack.deps);
    const jobId = await startRun(team);
    const client = createClient({ baseUrl: stack.baseUrl, apiKey: team.key });
    const made = await client.runToken(jobId, { expiresInSeconds: 120 });
    expect(Date.parse(made.expiresAt) - Date.now()).toBeLessThanOrEqual(120_000);
    expect((await fetch(made.links.run)).status).toBe(200);
    const byDefault = await client.runToken(jobId);
    expect(Date.parse(byDefault.expiresAt) - Date.now()).toBeGreaterThan(3_000_000);

    const printed = await runCli({ baseUrl: stack.baseUrl, key: team.key }, [
      'run',
      'token',
      jobId,
      '--expires-in',
      '300',
      '--json',
    ]);
    expect(printed.code, printed.stderr).toBe(0);
    const token = JSON.parse(printed.stdout) as Made;
    expect((await streamHead(token.links.events)).headers.get('access-control-allow-origin')).toBe('*');
    const refused = await runCli({ baseUrl: stack.baseUrl, key: team.key }, [
      'run',
      'token',
      jobId,
      '--expires-in',
      '30',
    ]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('--expires-in must be a whole number of seconds from 60 to 86400');
  });
});

describe('the routes that accept a run token', () => {
  it('are GET /runs/{jobId} and its event stream, and only they', () => {
    expect(routes.filter((route) => route.runToken).map((route) => `${route.method} ${basePath}${route.path}`)).toEqual(
      [`GET ${basePath}/runs/{jobId}`, `GET ${basePath}/runs/{jobId}/events`],
    );
  });
});
