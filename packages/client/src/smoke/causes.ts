/**
 * Why a smoke check failed, told from what the API answered: a failed step's error text (the
 * provider's own words, kept in the step's `error`), an API error's class, or a model's lifecycle
 * status as Bedrock's control plane reports it. Pure: no I/O, so each rule is tested by itself.
 */
import {
  ApiError,
  ForbiddenError,
  PaymentRequiredError,
  RateLimitError,
  StorageRefusedError,
  UnauthorizedError,
  UploadError,
  WaitTimeoutError,
} from '../errors.ts';

/** The named causes a failed check reports. */
export const smokeCauses = [
  'access not granted',
  'model not served in region',
  'lifecycle',
  'timeout',
  'key refused',
  'key lacks a scope',
  'credits',
  'rate limited',
  'storage refused',
  'unreachable',
  'step failed',
  'wrong result',
  'API error',
] as const;
export type SmokeCause = (typeof smokeCauses)[number];

/**
 * The patterns, in the order they are tried: lifecycle before access, since Bedrock refuses a Legacy
 * model the account has not used lately with an "Access denied" that names the Legacy state.
 */
const stepErrorRules: readonly [SmokeCause, RegExp][] = [
  [
    'lifecycle',
    /ResourceNotFoundException|end of (its )?life|\bEOL\b|\blegacy\b|deprecated|no longer (available|supported)/i,
  ],
  [
    'model not served in region',
    /model identifier is invalid|on-demand throughput isn.t supported|inference profile|not (available|supported) in (this|the) region/i,
  ],
  [
    'access not granted',
    /AccessDeniedException|access ?denied|not authorized to perform|don.t have access to the model|aws-marketplace|marketplace subscription|use case (details|form)|model access/i,
  ],
  ['timeout', /timed out|time ?out|deadline/i],
];

/** The cause a failed step's error text names; `step failed` when it names none of them. */
export const classifyStepError = (text: string): SmokeCause =>
  stepErrorRules.find(([, pattern]) => pattern.test(text))?.[0] ?? 'step failed';

/** The cause of an error a check threw: the API's answer, storage's refusal, a deadline or the network. */
export const causeOfError = (error: unknown): SmokeCause => {
  if (error instanceof UnauthorizedError) return 'key refused';
  if (error instanceof ForbiddenError) return 'key lacks a scope';
  if (error instanceof PaymentRequiredError) return 'credits';
  if (error instanceof RateLimitError) return 'rate limited';
  if (error instanceof ApiError) return 'API error';
  if (error instanceof StorageRefusedError) return 'storage refused';
  if (error instanceof UploadError) return 'wrong result';
  if (error instanceof WaitTimeoutError) return 'timeout';
  const name = (error as { name?: string } | undefined)?.name;
  if (name === 'TimeoutError' || name === 'AbortError') return 'timeout';
  if (error instanceof TypeError && /fetch failed/i.test(error.message)) return 'unreachable';
  return 'API error';
};

/** A model's lifecycle as Bedrock's GetFoundationModel reports it (`modelLifecycle.status`). */
export interface LifecycleJudgement {
  ok: boolean;
  detail: string;
}

/**
 * ACTIVE is fine; LEGACY fails (a Legacy model is refused to accounts that have not used it lately,
 * and reaches its end of life within months); anything else (a status this tool does not know, or
 * none) fails too, so an unread answer never passes.
 */
export const judgeLifecycle = (status: string | undefined): LifecycleJudgement => {
  if (status === 'ACTIVE') return { ok: true, detail: 'ACTIVE' };
  if (status === 'LEGACY') return { ok: false, detail: 'LEGACY: replace this default with an Active model' };
  return { ok: false, detail: `lifecycle status ${status ?? 'missing'}: not ACTIVE` };
};

/**
 * The foundation model behind a Bedrock model id: an inference profile's id is the model's with a
 * geography in front (`us.anthropic.claude-…` → `anthropic.claude-…`), and GetFoundationModel takes
 * the model's.
 */
export const foundationModelId = (modelId: string): string =>
  modelId.replace(/^(us|eu|apac|us-gov|jp|au|ca|global)\./, '');
