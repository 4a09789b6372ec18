/**
 * What a synchronous model call may ask for so that it ends within its step's deadline
 * (`stepNodeTimeoutSeconds`, 25 s): a text answer is generated token by token, so its length bounds
 * its time. An answer longer than the deadline allows would be cut every time, each try paid at the
 * provider, and the step fail as a `timeout`; asked for at most `syncTextMaxTokens`, it ends in time
 * (its `stop_reason` is the length) and is charged for what it answered. A step on an asynchronous
 * provider (a job) is not bounded: it holds no Lambda while it runs. Why these figures:
 * docs/decisions/providers.md, "Synchronous calls fit their step's deadline".
 */
import { stepNodeTimeoutSeconds } from '../../../platform/definitions.ts';

/** Seconds of the deadline kept for all but generating: the request, the model reading the prompt, storing the answer. */
export const syncCallOverheadSeconds = 5;

/** Output tokens a second the budget assumes of a synchronous text model: a floor we chose, not a provider's promise. */
export const syncTextTokensPerSecond = 50;

/** The most answer tokens a synchronous text call asks for within a deadline of `deadlineSeconds`. */
export const syncTextMaxTokens = (deadlineSeconds: number = stepNodeTimeoutSeconds): number =>
  Math.max(1, Math.floor((deadlineSeconds - syncCallOverheadSeconds) * syncTextTokensPerSecond));
