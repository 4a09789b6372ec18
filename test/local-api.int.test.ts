import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestStack, type TestStack } from './support/stack.ts';

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(() => stack.close());

describe('local API Gateway emulation', () => {
  it('serves every route under /api/v1', () => {
    expect(stack.baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api\/v1$/);
  });

  it('answers unknown routes and methods with API Gateway’s 404 body', async () => {
    const origin = stack.baseUrl.replace('/api/v1', '');
    for (const [method, url] of [
      ['GET', `${stack.baseUrl}/nope`],
      ['GET', `${origin}/workflows`],
      ['PUT', `${stack.baseUrl}/workflows`],
    ] as const) {
      const response = await fetch(url, { method });
      expect(response.status).toBe(404);
      expect(await response.text()).toBe('{"message":"Not Found"}');
    }
  });

  it('serves the API description without a key, and sends no CORS headers', async () => {
    const response = await call(stack.baseUrl, '/openapi.json', { headers: { origin: 'https://example.com' } });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ openapi: '3.1.0', info: { version: '1.0.0' } });
    expect(response.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('hands the handler a payload 2.0 event with lower-cased headers and a request id', async () => {
    const { toEventV2 } = await import('../local/api-gateway.ts');
    const { routes } = await import('../platform/routes.ts');
    const route = routes.find((r) => r.id === 'ListWorkflows');
    if (!route) throw new Error('route missing');
    const event = toEventV2(
      {
        method: 'GET',
        httpVersion: '1.1',
        headers: { authorization: 'Bearer x', 'x-custom': ['a', 'b'], cookie: 'a=1; b=2' },
        socket: { remoteAddress: '127.0.0.1' },
      } as never,
      new URL('http://localhost/api/v1/workflows?x=1&x=2'),
      Buffer.alloc(0),
      { route, pathParameters: {} },
    );
    expect(event).toMatchObject({
      version: '2.0',
      routeKey: 'GET /api/v1/workflows',
      rawPath: '/api/v1/workflows',
      rawQueryString: 'x=1&x=2',
      cookies: ['a=1', 'b=2'],
      headers: { authorization: 'Bearer x', 'x-custom': 'a,b' },
      queryStringParameters: { x: '1,2' },
      requestContext: { stage: '$default', http: { method: 'GET', path: '/api/v1/workflows' } },
      isBase64Encoded: false,
    });
    expect(event.requestContext.requestId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('answers a storage failure with 500 Server error and no internals', async () => {
    const { startLocalApi } = await import('../local/api-gateway.ts');
    const { seedTeam } = await import('./support/stack.ts');
    const team = await seedTeam(stack.deps);
    // A table that does not exist: every read fails the way an outage would.
    const broken = await startLocalApi({
      deps: { ...stack.deps, tableName: 'missing-table' },
      port: 0,
      host: '127.0.0.1',
    });
    try {
      const response = await call(broken.baseUrl, '/workflows', { key: team.key });
      expect(response.status).toBe(500);
      expect(String(response.body.error)).toMatch(
        /^Server error: storage unavailable \(ResourceNotFoundException\) \(request [0-9a-f-]{36}\)$/,
      );
      expect(JSON.stringify(response.body)).not.toContain(team.key);
    } finally {
      await broken.close();
    }
  });
});
