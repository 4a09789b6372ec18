/**
 * The optional lifecycle check: each Bedrock default's `modelLifecycle.status`, read with Bedrock's
 * control-plane `GetFoundationModel` in the stage's region with the operator's AWS credentials (the
 * SDK's default chain). `@aws-sdk/client-bedrock` is loaded only when the check runs, so the CLI
 * needs it installed only for `--aws-region`.
 */
import { causeOfError, classifyStepError, foundationModelId, judgeLifecycle } from './causes.ts';
import type { CheckResult } from './context.ts';

/** Reads one model's lifecycle status (`ACTIVE`, `LEGACY`); throws what Bedrock answered. */
export type GetLifecycleStatus = (foundationModelId: string) => Promise<string | undefined>;

export const bedrockLifecycleReader = async (region: string): Promise<GetLifecycleStatus> => {
  const { BedrockClient, GetFoundationModelCommand } = await import('@aws-sdk/client-bedrock');
  const bedrock = new BedrockClient({ region });
  return async (modelIdentifier) => {
    const answer = await bedrock.send(new GetFoundationModelCommand({ modelIdentifier }));
    return answer.modelDetails?.modelLifecycle?.status;
  };
};

/** One line per model: ACTIVE passes, LEGACY fails, and an error names its cause. */
export const lifecycleCheck = async (modelId: string, read: GetLifecycleStatus): Promise<CheckResult> => {
  const began = performance.now();
  const name = `lifecycle ${modelId}`;
  const ms = () => Math.round(performance.now() - began);
  try {
    const verdict = judgeLifecycle(await read(foundationModelId(modelId)));
    return verdict.ok
      ? { name, status: 'pass', detail: verdict.detail, credits: 0, ms: ms() }
      : { name, status: 'fail', cause: 'lifecycle', detail: verdict.detail, credits: 0, ms: ms() };
  } catch (error) {
    const text = `${(error as Error).name}: ${(error as Error).message}`;
    const cause = classifyStepError(text);
    return {
      name,
      status: 'fail',
      cause: cause === 'step failed' ? causeOfError(error) : cause,
      detail: text,
      credits: 0,
      ms: ms(),
    };
  }
};
