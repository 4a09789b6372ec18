/**
 * What the files whose model steps run on provider stand-ins share: the fake AWS credentials the
 * Bedrock stand-in accepts, the process environment the SDK reads them from, the step executor as
 * Lambda runs it over a stage's settings, and delivering the queued steps until none is left.
 */

import type { Deps } from '../../functions/deps.ts';
import { stageProvidersFromEnv } from '../../functions/nodes/providers/stage.ts';
import { makeHandler } from '../../functions/workers/step-executor.ts';
import { invokedAs } from '../../local/invocation.ts';
import { testExecutors } from './stack.ts';

/** Fake static credentials: the Bedrock stand-in checks the SigV4 header's shape and scope, not its signature. */
export const fakeAwsCredentials = {
  AWS_ACCESS_KEY_ID: 'AKIAIOSFODNN7EXAMPLE',
  AWS_SECRET_ACCESS_KEY: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
  AWS_REGION: 'us-east-1',
};

/**
 * Sets `env` on the process (an `undefined` value removes the name), as a deployed function's
 * environment: the SDK reads the Bedrock endpoint and the credentials from there. Returns the undo.
 */
export const overrideProcessEnv = (env: Record<string, string | undefined>): (() => void) => {
  const saved: Record<string, string | undefined> = {};
  const set = (name: string, value: string | undefined) => {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  };
  for (const [name, value] of Object.entries(env)) {
    saved[name] = process.env[name];
    set(name, value);
  }
  return () => {
    for (const [name, value] of Object.entries(saved)) set(name, value);
  };
};

/** The Bedrock stand-in as the SDK finds it: its endpoint, the fake credentials, no session or profile. */
export const bedrockProcessEnv = (endpoint: string) =>
  overrideProcessEnv({
    ...fakeAwsCredentials,
    AWS_ENDPOINT_URL_BEDROCK_RUNTIME: endpoint,
    AWS_SESSION_TOKEN: undefined,
    AWS_PROFILE: undefined,
  });

/**
 * The step executor as Lambda runs it, over `deps` and the stage's `settings`: webhooks to the local
 * API at `baseUrl` (none without it), on the clock `now` when given, each node cut at `stepTimeoutMs`
 * (20 s unless given: a test of the deadline injects a short one rather than waiting 25 s).
 */
export const stageStepExecutor = (
  deps: Deps,
  settings: NodeJS.ProcessEnv,
  options: { baseUrl?: string; now?: () => Date; stepTimeoutMs?: number } = {},
) => {
  const env = { ...settings, ...(options.baseUrl ? { PUBLIC_BASE_URL: new URL(options.baseUrl).origin } : {}) };
  const stepDeps: Deps = {
    ...deps,
    executors: testExecutors(env),
    providers: stageProvidersFromEnv(env),
    ...(options.now ? { now: options.now } : {}),
  };
  return {
    deps: stepDeps,
    handler: invokedAs('StepExecutor', makeHandler(stepDeps, { stepTimeoutMs: options.stepTimeoutMs ?? 20_000 })),
  };
};

/** Closes each of `resources` (a stand-in, or an undo such as `bedrockProcessEnv`'s) with the file's stack. */
export const closeWithStack = (
  closers: (() => Promise<void>)[],
  ...resources: ({ close: () => Promise<void> } | (() => void))[]
) => {
  for (const resource of resources)
    closers.push(typeof resource === 'function' ? async () => resource() : () => resource.close());
};
