/**
 * The operating system's box itself, without the walls inside the JavaScript realm: a child started
 * by `startBox` exactly as a run's is (the same flags, an empty environment, the same protocol), but
 * whose script is what JavaScript past every wall could try (`fixtures/box-escape.mjs`). Each attempt
 * must be refused by Node's permission model or find nothing.
 */
import { realpathSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { type Box, boxFlags, startBox } from '../functions/python/box.ts';

const files = {
  indexPath: `${realpathSync(dirname(createRequire(import.meta.url).resolve('pyodide/pyodide.mjs')))}/`,
  childScript: realpathSync(fileURLToPath(new URL('./fixtures/box-escape.mjs', import.meta.url))),
};
const limits = { memoryMb: 64, jsHeapMb: 64, processMemoryMb: 256, maxOutputChars: 1000, maxResultBytes: 64 * 1024 };
const boxes: Box[] = [];
afterAll(async () => {
  for (const box of boxes) await box.kill();
});

describe('the box a Python run lives in', () => {
  it('is started with the permission model, reading only its own files, and no code from strings', () => {
    expect(boxFlags({ files, limits, snapshotPath: '/tmp/s/pyodide.snapshot' })).toEqual([
      '--permission',
      `--allow-fs-read=${files.indexPath}`,
      `--allow-fs-read=${files.childScript}`,
      '--allow-fs-read=/tmp/s/pyodide.snapshot',
      '--disallow-code-generation-from-strings',
      '--max-old-space-size=64',
    ]);
  });

  it('gives JavaScript past every wall no environment, no file outside its own, no process, worker, addon or code', async () => {
    process.env.PYTHON_BOX_TEST_SECRET = 'python-box-test-secret';
    let box: Box;
    try {
      box = startBox({ files, limits });
    } finally {
      delete process.env.PYTHON_BOX_TEST_SECRET;
    }
    boxes.push(box);
    await box.ready;
    const outcome = await box.run({ code: '', inputsJson: '[]' }, 10_000);
    if (!('answered' in outcome) || !('ok' in outcome.answered)) throw new Error(JSON.stringify(outcome));
    expect(JSON.parse(outcome.answered.resultJson)).toEqual({
      'process.env': { got: [] },
      'the report': { got: [] },
      'read /etc/passwd': { refused: 'ERR_ACCESS_DENIED' },
      'read /proc/self/environ': { refused: 'ERR_ACCESS_DENIED' },
      'read the parent directory': { refused: 'ERR_ACCESS_DENIED' },
      'write /tmp': { refused: 'ERR_ACCESS_DENIED' },
      'write a report file': { refused: 'ERR_ACCESS_DENIED' },
      spawn: { refused: 'ERR_ACCESS_DENIED' },
      'a worker': { refused: 'ERR_ACCESS_DENIED' },
      WASI: { refused: 'ERR_ACCESS_DENIED' },
      'an addon': { refused: 'ERR_DLOPEN_DISABLED' },
      'Function from a string': { refused: 'EvalError' },
      eval: { refused: 'EvalError' },
    });
  });
});
