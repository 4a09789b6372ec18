/**
 * Synthesizes the app with bundling, as `npx cdk synth` does (the CDK CLI, cdk.json, the stage's
 * context), into a fresh temporary directory: offline and without credentials, so the stacks are
 * environment-agnostic whoever runs it. Beside the assembly, `node_modules/@aws-sdk` links to the
 * repository's AWS SDK: the one package family the nodejs24.x runtime provides to a bundle
 * (`lib/bundling.ts` leaves it external). Nothing else the bundle imports is resolvable, so a
 * dependency missing from a bundle fails its import, as it would on Lambda.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { repoRoot } from '../../lib/service-function.ts';
import type { StageName } from '../../lib/stages.ts';

export interface Synthesized {
  /** The cloud assembly directory (what `cdk deploy` would deploy). */
  dir: string;
  ms: number;
  /** Deletes the assembly and its directory. */
  remove(): void;
}

/** The environment of the CDK CLI: this Node first on the PATH, no AWS credentials or profile. */
const offlineEnvironment = (): NodeJS.ProcessEnv => {
  const environment: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!/^(AWS_|CDK_)/.test(name)) environment[name] = value;
  }
  return {
    ...environment,
    PATH: [dirname(process.execPath), join(repoRoot, 'node_modules', '.bin'), process.env.PATH].join(delimiter),
    AWS_EC2_METADATA_DISABLED: 'true',
    AWS_CONFIG_FILE: join(tmpdir(), 'workflow-run-api-no-aws-config'),
    AWS_SHARED_CREDENTIALS_FILE: join(tmpdir(), 'workflow-run-api-no-aws-credentials'),
  };
};

/**
 * `cdk synth -o <temp>/cdk.out -c stage=<stage>` and `-c key=value` for each of `context`; rejects
 * with the CLI's output when it fails.
 */
export const synthesize = async (
  options: { stage?: StageName; context?: Readonly<Record<string, string>> } = {},
): Promise<Synthesized> => {
  const root = mkdtempSync(join(tmpdir(), 'workflow-run-api-rehearsal-'));
  const remove = () => rmSync(root, { recursive: true, force: true });
  const dir = join(root, 'cdk.out');
  mkdirSync(join(root, 'node_modules'));
  symlinkSync(join(repoRoot, 'node_modules', '@aws-sdk'), join(root, 'node_modules', '@aws-sdk'), 'dir');
  const began = performance.now();
  const cli = join(repoRoot, 'node_modules', 'aws-cdk', 'bin', 'cdk');
  const args = [
    cli,
    'synth',
    '--output',
    dir,
    '--quiet',
    '--no-notices',
    '-c',
    `stage=${options.stage ?? 'dev'}`,
    ...Object.entries(options.context ?? {}).flatMap(([key, value]) => ['-c', `${key}=${value}`]),
  ];
  let output = '';
  try {
    const code = await new Promise<number | null>((resolve, reject) => {
      const child = spawn(process.execPath, args, { cwd: repoRoot, env: offlineEnvironment() });
      child.stdout.on('data', (chunk) => {
        output += chunk;
      });
      child.stderr.on('data', (chunk) => {
        output += chunk;
      });
      child.on('error', reject);
      child.on('close', resolve);
    });
    if (code !== 0)
      throw new Error(`cdk synth exited with ${code}:\n${output.trim().split('\n').slice(-30).join('\n')}`);
  } catch (error) {
    remove();
    throw error;
  }
  return { dir, ms: Math.round(performance.now() - began), remove };
};
