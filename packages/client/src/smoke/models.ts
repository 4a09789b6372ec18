/**
 * One small run of each model node type on the stage's default (no step names a provider or a
 * model), at its cheapest settings and in `draft` mode. The Run's `generated_by` says which provider
 * actually ran it: the offline `sandbox` stand-in means the stage has not turned the default's
 * provider on, which is reported as skipped, not passed. A failed step's error names the cause.
 */
import type { WorkflowStep } from '../client.ts';
import { ValidationError } from '../errors.ts';
import { classifyStepError } from './causes.ts';
import { CheckFailure, type CheckOutcome, failureText, runToEnd, type SmokeContext } from './context.ts';

/** The model node types, as the service's catalogue has them (a test holds the two lists equal). */
export const smokeModelTypes = [
  'ImageGen',
  'AudioGen',
  '3DTransform',
  'LlmWorker',
  'DiffusionWorker',
  'ControlNetFilter',
  'VisionInterrogator',
  'DepthEstimator',
  'PbrSynthesizer',
  'TwoDToThreeD',
  'AutoRigger',
  'Upscaler',
  'BackgroundRemover',
  'Embedder',
] as const;
export type SmokeModelType = (typeof smokeModelTypes)[number];

type Input = string | { from: string; targetHandle: string };

interface ModelCase {
  /** What the model step reads: the prompt, the uploaded image, the uploaded mesh. */
  inputs: Input[];
  /** Its cheapest settings. */
  config: Record<string, unknown>;
  /** The check's own deadline: the provider's job deadline for its kind, or less. */
  deadlineSeconds: number;
}

const minutes = (n: number) => n * 60;

export const modelCases: Record<SmokeModelType, ModelCase> = {
  ImageGen: { inputs: ['prompt'], config: { width: 64, height: 64, steps: 1, variations: 1 }, deadlineSeconds: 300 },
  AudioGen: { inputs: ['prompt'], config: { durationSeconds: 1 }, deadlineSeconds: minutes(15) },
  '3DTransform': {
    inputs: ['image', { from: 'prompt', targetHandle: 'prompt' }],
    config: {},
    deadlineSeconds: minutes(30),
  },
  LlmWorker: { inputs: ['prompt'], config: { maxTokens: 16 }, deadlineSeconds: 120 },
  DiffusionWorker: {
    inputs: ['prompt', { from: 'image', targetHandle: 'image' }],
    config: { width: 64, height: 64, steps: 1 },
    deadlineSeconds: 300,
  },
  ControlNetFilter: {
    inputs: ['image', { from: 'prompt', targetHandle: 'prompt' }],
    config: {},
    deadlineSeconds: 300,
  },
  VisionInterrogator: {
    inputs: ['image', { from: 'prompt', targetHandle: 'question' }],
    config: { maxTokens: 16, detail: 'low' },
    deadlineSeconds: 120,
  },
  DepthEstimator: { inputs: ['image'], config: {}, deadlineSeconds: 300 },
  PbrSynthesizer: { inputs: ['image'], config: { resolution: 512 }, deadlineSeconds: minutes(15) },
  TwoDToThreeD: { inputs: ['image'], config: {}, deadlineSeconds: minutes(30) },
  AutoRigger: { inputs: ['mesh'], config: {}, deadlineSeconds: minutes(30) },
  Upscaler: { inputs: ['image'], config: { scale: 2 }, deadlineSeconds: 300 },
  BackgroundRemover: { inputs: ['image'], config: {}, deadlineSeconds: 300 },
  Embedder: { inputs: ['prompt'], config: {}, deadlineSeconds: 120 },
};

const inputKey = (input: Input) => (typeof input === 'string' ? input : input.from);

/** The workflow of one model check: its inputs (a prompt, the uploaded files) and the model step. */
export const modelSteps = (type: SmokeModelType): WorkflowStep[] => {
  const { inputs, config } = modelCases[type];
  const reads = new Set(inputs.map(inputKey));
  return [
    ...(reads.has('prompt') ? [{ key: 'prompt', type: 'TextEntry', config: { text: 'a small red cube' } }] : []),
    ...(reads.has('image') ? [{ key: 'image', type: 'ImageLoader', config: { apiInputKey: 'image' } }] : []),
    ...(reads.has('mesh') ? [{ key: 'mesh', type: 'RigImporter', config: { apiInputKey: 'mesh' } }] : []),
    { key: 'model', type, config, inputs },
  ] as WorkflowStep[];
};

export const modelCheck = async (ctx: SmokeContext, type: SmokeModelType): Promise<CheckOutcome> => {
  const workflowId = await ctx.workflowFor(`model-${type}`, modelSteps(type));
  const reads = new Set(modelCases[type].inputs.map(inputKey));
  const inputs: Record<string, string> = {};
  if (reads.has('image')) inputs.image = await ctx.uploaded('image');
  if (reads.has('mesh')) inputs.mesh = await ctx.uploaded('mesh');
  let ended: Awaited<ReturnType<typeof runToEnd>>;
  try {
    ended = await runToEnd(ctx, workflowId, { mode: 'draft', inputs });
  } catch (error) {
    // The stage may not use the default's provider at all (the run start names it): not enabled here.
    if (error instanceof ValidationError && error.body.providers !== undefined) {
      return { status: 'skip', detail: `not enabled on this stage: ${error.body.error}`, credits: 0 };
    }
    throw error;
  }
  const { run, credits } = ended;
  if (run.status !== 'completed') {
    const text = failureText(run);
    throw new CheckFailure(classifyStepError(text), text, { credits, jobId: run.jobId });
  }
  const ran = run.output.flatMap((o) => o.generated_by ?? []).find((g) => g.node_id === 'model');
  if (!ran) throw new CheckFailure('wrong result', 'the output names no model that ran', { credits, jobId: run.jobId });
  const ranOn = { provider: ran.provider, model: ran.model ?? '' };
  if (ran.provider === 'sandbox') {
    return {
      status: 'skip',
      detail: `its provider is not enabled on this stage: ran on the offline sandbox (${ran.model})`,
      credits,
      jobId: run.jobId,
    };
  }
  return { status: 'pass', detail: `${ran.provider} ${ran.model}`, credits, jobId: run.jobId, ranOn };
};
