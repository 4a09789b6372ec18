/**
 * The `workflow-run` CLI as a process, where no API is needed: its launcher (bin/workflow-run.js)
 * over a closed pipe, as `workflow-run … | head` leaves it.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const repositoryRoot = fileURLToPath(new URL('..', import.meta.url));

describe('workflow-run as a process', () => {
  it('exits quietly (0, nothing on stderr) when its reader has gone, as after `| head`', async () => {
    const child = spawn(process.execPath, ['packages/client/bin/workflow-run.js', '--help'], {
      cwd: repositoryRoot,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    // The reader stops before the CLI writes a byte: its first write meets a closed pipe (EPIPE).
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(stderr).toBe('');
    expect(code).toBe(0);
  });
});
