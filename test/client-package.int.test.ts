/**
 * The client package as another project gets it: `npm pack -w packages/client` (which builds
 * `dist/`), `npm install <tarball>` into a scratch project (`--prefer-offline`: its two dependencies
 * come from npm's cache, or else the npm registry), then the `workflow-run` CLI through `npx --offline` (never the public registry) and
 * a typed call: `tsc` over a file that uses the generated types (a run's result, the event stream's
 * events, a workflow create's agentId-or-projectId), then that file run against the local stack.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SeededTeam, seedTeam, startWorkingStack, type TestStack } from './support/stack.ts';

const run = promisify(execFile);
const repositoryRoot = fileURLToPath(new URL('..', import.meta.url));
const typescript = join(repositoryRoot, 'node_modules/typescript/bin/tsc');

let stack: TestStack;
let team: SeededTeam;
let scratch: string;

beforeAll(async () => {
  stack = await startWorkingStack();
  team = await seedTeam(stack.deps, { credits: 1000 });
  scratch = await mkdtemp(join(tmpdir(), 'client-package-'));
});
afterAll(async () => {
  await stack?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

/** A command in the scratch project, with the API's URL and key in its environment. */
const inScratch = (file: string, args: string[]) =>
  run(file, args, {
    cwd: scratch,
    env: {
      ...process.env,
      WORKFLOW_RUN_API_URL: stack.baseUrl,
      WORKFLOW_RUN_API_KEY: team.key,
      AGENT_ID: team.agentId,
    },
    maxBuffer: 16 * 1024 * 1024,
  });

/** Uses the package's types as a project would; each `@ts-expect-error` must be an error, or tsc fails. */
const typedCall = `import { createClient, isRunFile, type paths, type Run, type RunEvent, type RunResult, type WorkflowStep } from '@workflow-run-api/client';

const api = createClient({ baseUrl: process.env.WORKFLOW_RUN_API_URL!, apiKey: process.env.WORKFLOW_RUN_API_KEY! });
const agentId = process.env.AGENT_ID!;
const steps: WorkflowStep[] = [
  { key: 'topic', type: 'TextEntry', config: { text: 'otters', apiInputKey: 'topic' } },
  { key: 'show', type: 'TextConsole', inputs: ['topic'] },
];

// Exactly one of agentId or projectId: both, or neither, do not compile.
// @ts-expect-error both
export const both: Parameters<typeof api.createWorkflow>[0] = { name: 'x', steps: steps, agentId, projectId: agentId };
// @ts-expect-error neither
export const neither: Parameters<typeof api.createWorkflow>[0] = { name: 'x', steps: steps };

// A result is typed: a string reads as one, and a value no JSON answer holds does not compile.
export const text = (run: Run): string | undefined => {
  const result = run.output[0]?.result;
  return typeof result === 'string' ? result : undefined;
};
// @ts-expect-error a result is never a function
export const notAResult: Run['output'][number]['result'] = () => 1;
// A file in a result, read with the client's guard: no cast.
export const firstUrl = (result: RunResult): string | null => (isRunFile(result) ? result.url : null);

// The stream's events, as the document types them: by name, with the data that name carries.
type StreamEvent = paths['/runs/{jobId}/events']['get']['responses'][200]['content']['text/event-stream'];
export const describeEvent = (event: StreamEvent): string =>
  event.event === 'step' ? \`\${event.data.node_id} \${event.data.status}\` : event.event === 'done' ? event.data.status : event.id;
// The client's own RunEvent (what runEvents yields) is that type.
export const fromClient = (event: RunEvent): StreamEvent => event;

const { workflowId } = await api.createWorkflow({ name: 'Packed', agentId, steps: steps });
const started = await api.runWorkflow(workflowId, { inputs: { topic: 'badgers' } });
if (!('jobId' in started)) throw new Error('deferred');
const ended = await api.waitForRun(started.jobId, { intervalMs: 100 });
console.log(JSON.stringify({ status: ended.status, text: text(ended) }));
`;

describe('the client package, packed and installed elsewhere', () => {
  it('installs from its tarball; the CLI runs through npx --offline; a typed call compiles and runs', {
    timeout: 300_000,
  }, async () => {
    const packed = await run('npm', ['pack', '-w', 'packages/client', '--pack-destination', scratch, '--json'], {
      cwd: repositoryRoot,
      maxBuffer: 16 * 1024 * 1024,
    });
    const [{ filename, files }] = JSON.parse(packed.stdout) as [{ filename: string; files: { path: string }[] }];
    const paths = files.map((f) => f.path);
    expect(paths).toEqual(
      expect.arrayContaining(['dist/index.js', 'dist/index.d.ts', 'dist/cli.js', 'bin/workflow-run.js']),
    );
    expect(paths.filter((p) => p.startsWith('src/'))).toEqual([]);

    await writeFile(join(scratch, 'package.json'), JSON.stringify({ name: 'scratch', private: true, type: 'module' }));
    const install = await inScratch('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', `./${filename}`]);
    const installed = JSON.parse(await readFile(join(scratch, 'package.json'), 'utf8'));
    expect(Object.keys(installed.dependencies)).toEqual(['@workflow-run-api/client']);
    // Nothing runs at install (dist is in the tarball), so npm has no install script to ask about.
    const manifest = JSON.parse(
      await readFile(join(scratch, 'node_modules/@workflow-run-api/client/package.json'), 'utf8'),
    ) as { scripts?: Record<string, string> };
    for (const hook of ['preinstall', 'install', 'postinstall', 'prepare'])
      expect(manifest.scripts?.[hook]).toBeUndefined();
    expect(install.stderr).not.toContain('install-scripts');

    // The CLI, found in the project's node_modules/.bin: --offline keeps npx from ever asking the registry.
    const help = await inScratch('npx', ['--offline', 'workflow-run', '--help']);
    expect(help.stdout).toMatch(/^Usage: workflow-run/);

    await writeFile(join(scratch, 'call.ts'), typedCall);
    await writeFile(
      join(scratch, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          noEmit: true,
          allowImportingTsExtensions: true,
          typeRoots: [join(repositoryRoot, 'node_modules/@types')],
          types: ['node'],
        },
        files: ['call.ts'],
      }),
    );
    await inScratch(process.execPath, [typescript, '-p', 'tsconfig.json']).catch((error: { stdout: string }) => {
      throw new Error(`tsc failed in the scratch project:\n${error.stdout}`);
    });
    const called = await inScratch(process.execPath, ['call.ts']);
    expect(JSON.parse(called.stdout)).toEqual({ status: 'completed', text: 'badgers' });
    // The CLI against the API: it lists the workflow the typed call made.
    const listed = await inScratch('npx', ['--offline', 'workflow-run', 'workflows', 'list', '--json']);
    expect((JSON.parse(listed.stdout) as { workflows: { name: string }[] }).workflows.map((w) => w.name)).toContain(
      'Packed',
    );
  });
});
