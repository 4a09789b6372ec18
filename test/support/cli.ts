/** The `workflow-run` CLI run as a user runs it: a child process with the API's URL and key in its environment. */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const repositoryRoot = fileURLToPath(new URL('../..', import.meta.url));

export const runCli = (api: { baseUrl: string; key: string }, args: string[], env: Record<string, string> = {}) =>
  new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(process.execPath, ['packages/client/src/cli.ts', ...args], {
      cwd: repositoryRoot,
      env: { ...process.env, WORKFLOW_RUN_API_URL: api.baseUrl, WORKFLOW_RUN_API_KEY: api.key, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
