/**
 * The repository's pinned stages (cdk.json `context.stages`), as the CDK CLI hands them to the app:
 * a test or bench that builds prod passes them, as `cdk synth -c stage=prod` would (lib/stage-pins.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { contextKeys } from '../../lib/stages.ts';

const repoRoot = path.resolve(import.meta.dirname, '../..');

type StageBlocks = Record<string, Record<string, unknown>>;

/** cdk.json's `context.stages`, read afresh. */
export const repositoryStages = (): StageBlocks =>
  (JSON.parse(fs.readFileSync(path.join(repoRoot, 'cdk.json'), 'utf8')) as { context: { stages: StageBlocks } }).context
    .stages;

/**
 * The context of a prod synth: the repository's prod pins, with `pins` changed as if cdk.json said
 * so (a key given `undefined` is left out of the block).
 */
export const pinnedProd = (pins: Record<string, unknown> = {}) => {
  const stages = repositoryStages();
  const prod = Object.fromEntries(
    Object.entries({ ...stages.prod, ...pins }).filter(([, value]) => value !== undefined),
  );
  return { [contextKeys.stage]: 'prod', [contextKeys.stages]: { ...stages, prod } };
};

/** Synthesis without bundling, in memory: what the CDK tests build with. */
export const synthOnly = { 'aws:cdk:bundling-stacks': [], '@aws-cdk/core:appMode': 'inmemory' } as const;

/**
 * A prod synth without bundling: the pinned prod, with Bedrock, Replicate (its image pins) and an
 * OpenAI-compatible provider, mailing ops.
 */
export const prodTestContext = () => ({
  ...synthOnly,
  ...pinnedProd({
    providers:
      'bedrock,replicate:ssm:/workflow-run-api/prod/replicate,openai-compatible:workflow-run-api/prod/providers/openai-compatible',
    alarmEmail: 'ops@example.com',
  }),
});
