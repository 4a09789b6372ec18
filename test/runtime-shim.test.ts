/**
 * The deploy rehearsal's Lambda runtime shim on small handwritten bundles (no emulator): the
 * handler string resolves as the Node.js runtime resolves it, the context counts down from the
 * timeout, an error is a function error, an invocation past the timeout fails as Sandbox.Timedout
 * and the next one is a cold start, and a bundle that does not import fails at start, named.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FunctionProcess } from '../local/rehearse/function-process.ts';

const dir = mkdtempSync(join(tmpdir(), 'runtime-shim-test-'));
const processes: FunctionProcess[] = [];
afterAll(async () => {
  await Promise.all(processes.map((p) => p.stop()));
  rmSync(dir, { recursive: true, force: true });
});

writeFileSync(
  join(dir, 'app.mjs'),
  `export const handler = async (event, context) => {
    if (event.sleepMs) await new Promise((r) => setTimeout(r, event.sleepMs));
    if (event.fail) throw new TypeError('asked to fail');
    if (event.spinMs) for (const end = Date.now() + event.spinMs; Date.now() < end; );
    return { echo: event, name: context.functionName, remaining: context.getRemainingTimeInMillis(),
      env: process.env.ONLY_THIS, task: process.env.LAMBDA_TASK_ROOT, shim: process.env.REHEARSE_TIMEOUT_SECONDS ?? null };
  };
  export const nested = { inner: async () => 'inner' };`,
);
writeFileSync(
  join(dir, 'hungry.mjs'),
  `export const handler = async () => { const kept = []; for (let i = 0; i < 25; i++) kept.push(new Array(1_000_000).fill(1)); return kept.length; };`,
);
writeFileSync(join(dir, 'broken.mjs'), `import 'a-package-that-is-not-bundled';\nexport const handler = () => 1;`);

const start = (handler: string, timeoutSeconds = 2) => {
  const fn = new FunctionProcess({
    name: 'Test',
    codeDir: dir,
    handler,
    timeoutSeconds,
    memoryMb: 256,
    environment: { ONLY_THIS: 'yes' },
  });
  processes.push(fn);
  return fn;
};

describe('the runtime shim', () => {
  it("fails an invocation that outgrows its function's memory, as Lambda ends its process", async () => {
    const fn = new FunctionProcess({
      name: 'Hungry',
      codeDir: dir,
      handler: 'hungry.handler',
      timeoutSeconds: 30,
      memoryMb: 64,
      environment: {},
    });
    processes.push(fn);
    // About 200 MB of arrays: past the 64 MB function, well within an unbounded Node's heap.
    const outcome = await fn.invoke({});
    expect(outcome).toMatchObject({ ok: false, error: { errorType: 'Runtime.ExitError' } });
  });

  it('imports the module of the handler string and runs its export with a Lambda context', async () => {
    const fn = start('app.handler');
    const outcome = await fn.invoke({ hello: 'world' });
    expect(outcome).toMatchObject({
      ok: true,
      result: { echo: { hello: 'world' }, name: 'Test', env: 'yes', task: dir, shim: null },
    });
    const { remaining } = (outcome as { result: { remaining: number } }).result;
    expect(remaining).toBeGreaterThan(1500);
    expect(remaining).toBeLessThanOrEqual(2000);
    expect(await start('app.nested.inner').invoke({})).toEqual({ ok: true, result: 'inner' });
  });

  it('answers a thrown error as a function error and keeps the environment', async () => {
    const fn = start('app.handler');
    expect(await fn.invoke({ fail: true })).toMatchObject({
      ok: false,
      error: { errorType: 'TypeError', errorMessage: 'asked to fail' },
    });
    expect((await fn.invoke({})).ok).toBe(true);
    expect(fn.invocations.map((i) => i.coldStart)).toEqual([true, false]);
  });

  it('fails an invocation past the timeout as Sandbox.Timedout; the next one is a cold start', async () => {
    const fn = start('app.handler', 1);
    expect(await fn.invoke({ sleepMs: 1500 })).toMatchObject({
      ok: false,
      error: { errorType: 'Sandbox.Timedout', errorMessage: 'Task timed out after 1 seconds' },
    });
    expect((await fn.invoke({})).ok).toBe(true);
    // A handler that blocks its event loop is ended from outside.
    expect(await fn.invoke({ spinMs: 5000 })).toMatchObject({ ok: false, error: { errorType: 'Sandbox.Timedout' } });
    expect((await fn.invoke({})).ok).toBe(true);
    expect(fn.invocations.map((i) => i.coldStart)).toEqual([true, true, false, true]);
  });

  it('fails at start, named, when the module, the export or an import is missing', async () => {
    await expect(start('missing.handler').start()).rejects.toThrow(
      /Runtime.ImportModuleError: Error: Cannot find module/,
    );
    await expect(start('app.nothing').start()).rejects.toThrow(/Runtime.HandlerNotFound/);
    await expect(start('broken.handler').start()).rejects.toThrow(
      /Runtime.ImportModuleError.*a-package-that-is-not-bundled/s,
    );
    await expect(start('nodot').start()).rejects.toThrow(/Runtime.MalformedHandlerName/);
  });
});
