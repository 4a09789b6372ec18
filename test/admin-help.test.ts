/** `npm run admin -- --help`: the usage, on stdout, with no parse error before it and no table needed. */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runAdmin } from '../local/admin.ts';

const repositoryRoot = fileURLToPath(new URL('..', import.meta.url));

describe('admin --help', () => {
  it.each([['--help'], ['run', 'show', '-h']])('%s … prints the usage alone and exits 0', (...args) => {
    const result = spawnSync(process.execPath, ['local/admin-main.ts', ...args], {
      cwd: repositoryRoot,
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(result.stderr).toBe('');
    expect(result.stdout).toMatch(/^Usage: npm run admin -- <command>/);
    expect(result.status).toBe(0);
  });

  it('runAdmin answers --help without touching its deps', async () => {
    const answer = await runAdmin(['--help'], new Proxy({} as never, { get: () => expect.unreachable() }));
    expect(answer).toMatchObject({ exitCode: 0, output: expect.stringMatching(/^Usage: /) });
  });
});
