import type { Run } from '../../schemas/runs.ts';
import type { Deps } from '../deps.ts';
import { mayReadStartedRun, waitPollDelayMs } from '../domain/prefer-wait.ts';
import { isEndStatus } from '../domain/run-lifecycle.ts';
import type { ApiKeyItem } from '../store/items/api-keys.ts';
import { readRunProgress } from '../store/run/index.ts';
import { readRunWithLinks } from './read-run.ts';
import type { RunStartAnswer } from './start-run.ts';

/** A wait a request asked for (`Prefer: wait=N`), as served: its seconds, and when it ends (ms, by `deps.now`). */
export interface RunWait {
  seconds: number;
  until: number;
}

const timer = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Looks at the run item (one eventually consistent GetItem of its progress, `readRunProgress`) at
 * once and then on the wait's schedule (functions/domain/prefer-wait.ts), until the run ends, is
 * gone (past its retention), or `until` passes. A stale look only makes the answer come one look later.
 */
export const waitForRunEnd = async (
  deps: Deps,
  jobId: string,
  until: number,
): Promise<'ended' | 'gone' | 'running'> => {
  for (let looks = 1; ; looks++) {
    const progress = await readRunProgress(deps, jobId);
    if (!progress) return 'gone';
    if (isEndStatus(progress.status)) return 'ended';
    const left = until - deps.now().getTime();
    if (left <= 0) return 'running';
    await (deps.sleep ?? timer)(Math.min(waitPollDelayMs(looks), left));
  }
};

/**
 * A run start's (or resume's) answer after its wait (`wait`: one `waitsForStart` allows): with
 * `run`, the Run exactly as GET /runs/{jobId} answers it, when the run ended within the wait; else
 * the answer as it was. A start answered again for its Idempotency-Key is waited for the same way,
 * so it shows the run as it is now (an ended run at the first look).
 */
export const withEndedRun = async (
  deps: Deps,
  key: ApiKeyItem,
  answer: RunStartAnswer,
  wait: RunWait | undefined,
): Promise<RunStartAnswer> => {
  const jobId = answer.body.jobId;
  if (!wait || typeof jobId !== 'string') return answer;
  // A run gone past its retention (an old start answered again for its Idempotency-Key): the answer as remembered.
  if ((await waitForRunEnd(deps, jobId, wait.until)) !== 'ended') return answer;
  const run = await readRunWithLinks(deps, key.teamId, jobId, key.workflowIds);
  return { ...answer, body: { ...answer.body, run } };
};

/**
 * Whether a start's answer is waited on: a run started, by a key that may read it. A deferred run
 * is not (it starts at its dispatch, not now).
 */
export const waitsForStart = (key: ApiKeyItem, answer: RunStartAnswer): boolean =>
  !answer.deferred && mayReadStartedRun(key.scopes);

/**
 * GET /runs/{jobId} with a wait: `read` at once (the run's 404 and an ended run answer then), and
 * when the run is in progress, again once it ends or the wait passes, whichever comes first.
 */
export const readRunAfterWait = async (
  deps: Deps,
  jobId: string,
  wait: RunWait | undefined,
  read: () => Promise<Run>,
): Promise<Run> => {
  const first = await read();
  if (!wait || isEndStatus(first.status)) return first;
  await waitForRunEnd(deps, jobId, wait.until);
  return read();
};
