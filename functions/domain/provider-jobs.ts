/**
 * The rules of a model step's job at an asynchronous provider (Replicate, fal), and of retrying a
 * provider that is busy: how long a job may run, when it is polled, how often a busy provider is
 * asked again. Pure: the step executor (functions/app/step/) applies them.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { isModelNodeType, type ModelNodeType } from '../../platform/model-defaults.ts';
import { StepStatus } from '../../platform/run-statuses.ts';

/**
 * How long a job may run at its provider before the step fails with "timed out at <provider>" and
 * the job is cancelled: text and vision answer in seconds, images and audio in tens of seconds,
 * meshes and rigs in minutes.
 */
export const jobDeadlineMinutes = {
  LlmWorker: 5,
  VisionInterrogator: 5,
  Embedder: 5,
  ImageGen: 10,
  DiffusionWorker: 10,
  ControlNetFilter: 10,
  DepthEstimator: 10,
  Upscaler: 15,
  BackgroundRemover: 10,
  PbrSynthesizer: 15,
  AudioGen: 15,
  TwoDToThreeD: 30,
  '3DTransform': 30,
  AutoRigger: 30,
} as const satisfies Record<ModelNodeType, number>;

/** The deadline of a job of `nodeType` submitted at `submittedAt`. */
export const jobDeadline = (nodeType: string, submittedAt: Date): Date => {
  const minutes = isModelNodeType(nodeType) ? jobDeadlineMinutes[nodeType] : 10;
  return new Date(submittedAt.getTime() + minutes * 60_000);
};

/** The first poll waits this long; each next one twice as long, up to `maxPollSeconds`. */
export const firstPollSeconds = 5;
export const maxPollSeconds = 120;

/**
 * Seconds before poll number `poll` (0 first), with up to 20 % jitter (`random` in [0, 1)) so that
 * many jobs submitted together do not poll together; never past the deadline by more than a poll.
 */
export const pollDelaySeconds = (poll: number, random: number): number => {
  const base = Math.min(firstPollSeconds * 2 ** Math.max(0, poll), maxPollSeconds);
  return Math.max(1, Math.round(base * (1 - 0.2 * random)));
};

/** A busy provider (429, 5xx, a timeout) is asked again at most this many times per step. */
export const maxProviderTries = 5;

/** Longest wait between tries (SQS's largest message delay is 900 s). */
export const maxRetryDelaySeconds = 900;

/**
 * Seconds before try number `tries` (1 after the first failure): full jitter over an exponential
 * window from 5 s (AWS's "exponential backoff and jitter"), never less than the provider's
 * `Retry-After`.
 */
export const stepRetryDelaySeconds = (tries: number, retryAfter: number | undefined, random: number): number => {
  const window = Math.min(5 * 2 ** Math.max(0, tries - 1), maxRetryDelaySeconds);
  const jittered = Math.max(1, Math.ceil(window * random));
  return Math.min(Math.max(jittered, retryAfter ?? 0), maxRetryDelaySeconds);
};

/** The message of a step whose job outlived its deadline. */
export const jobTimedOutMessage = (provider: string) => `timed out at ${provider}`;

/**
 * A step's webhook token: random, in the URL the provider calls back, so that a delivery names the
 * step it is for; only its hash is stored (a leaked table does not let anyone forge one).
 */
export const newWebhookToken = (): string => randomBytes(24).toString('base64url');

export const webhookTokenHash = (token: string): string => createHash('sha256').update(token).digest('base64url');

/** Whether `token` is the one whose hash the step stored (constant time). */
export const webhookTokenMatches = (token: string, storedHash: string | undefined): boolean => {
  if (storedHash === undefined) return false;
  const given = Buffer.from(webhookTokenHash(token));
  const stored = Buffer.from(storedHash);
  return given.length === stored.length && timingSafeEqual(given, stored);
};

/** Polls a job of `nodeType` can be given before its deadline, the one at the deadline included. */
export const pollsBeforeDeadline = (nodeType: string): number => {
  const deadlineSeconds = (jobDeadline(nodeType, new Date(0)).getTime() - 0) / 1000;
  let polls = 0;
  // The shortest delays (20 % jitter off each) give the most polls.
  for (let at = 0; at < deadlineSeconds; polls++) at += pollDelaySeconds(polls, 1);
  return polls + 1;
};

/** An intent whose job was never recorded: its token's hash and when it was written. */
export interface UnrecordedIntent {
  tokenHash: string;
  intendedAt: string;
}

/** Superseded intents a step's intent carries at most (a step is taken over only a few times). */
export const maxSupersededIntents = 10;

/**
 * The intents a claim's new intent supersedes: the previous claim's (`previous`, the step's job as
 * the claim found it) when its job was never recorded (its worker died between the submit and the
 * record, so the provider may be running a job no one knows), with those it superseded itself. None
 * after a recorded job (its claim looked for them already) or a busy provider's refusal (which drops
 * its intent: a refused submit started nothing).
 */
export const supersededIntents = (
  previous:
    | {
        attempt: number;
        id?: string | undefined;
        tokenHash: string;
        intendedAt?: string | undefined;
        superseded?: UnrecordedIntent[] | undefined;
      }
    | undefined,
  attempt: number,
): UnrecordedIntent[] => {
  if (!previous || previous.id !== undefined || previous.attempt >= attempt) return [];
  const own =
    previous.intendedAt === undefined ? [] : [{ tokenHash: previous.tokenHash, intendedAt: previous.intendedAt }];
  return [...(previous.superseded ?? []), ...own].slice(-maxSupersededIntents);
};

/**
 * Seconds after its intent a submit's guard message comes: just past the claim's lease (taken
 * before the intent), when a worker that died between the submit and the record is known dead.
 */
export const guardDelaySeconds = (leaseSeconds: number) => leaseSeconds + 2;

/**
 * What a submit's guard finds (the step item now; the guarded claim `attempt`): `done` when the job
 * was recorded, the claim gave the step back (a busy provider) or lost it, or the step ended;
 * `early` while the claim's lease still holds (a clock ahead: come again then); `retry` when the
 * claim died between its intent and its job's record: the step is taken over now.
 */
export type GuardVerdict = { kind: 'done' } | { kind: 'early'; seconds: number } | { kind: 'retry' };

export const guardVerdict = (
  step:
    | {
        status?: string | undefined;
        attempts?: number | undefined;
        leaseUntil?: string | undefined;
        providerJob?: { attempt: number; id?: string | undefined } | undefined;
      }
    | undefined,
  attempt: number,
  now: Date,
): GuardVerdict => {
  const job = step?.providerJob;
  if (step?.status !== StepStatus.processing || step.attempts !== attempt) return { kind: 'done' };
  if (job?.attempt !== attempt || job.id !== undefined) return { kind: 'done' };
  const left = Date.parse(step.leaseUntil ?? '') - now.getTime();
  if (left >= 0) return { kind: 'early', seconds: Math.ceil(left / 1000) + 1 };
  return { kind: 'retry' };
};

/**
 * The most step messages one step can send along its run (Lambda's loop guard counts them as hops
 * of one trace; the application bounds them itself): its first delivery and a redelivery per lost
 * worker (`stepExecutionAttempts`), a retry per busy-provider refusal, and for a job its polls to
 * the deadline and one look per webhook or cancel; and per claim a guard of its submit (sent again
 * once if it came early), and per lost worker the retry its guard sends.
 */
export const maxMessagesPerStep = (nodeType: string, executionAttempts: number): number => {
  const claims = executionAttempts + maxProviderTries;
  return claims + pollsBeforeDeadline(nodeType) + 2 + 2 * claims + executionAttempts;
};
