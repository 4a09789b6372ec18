/**
 * The run stream's events and ids (GET /runs/{jobId}/events), as pure rules.
 *
 * An event's id is what the client has been sent so far, encoded: the last status and progress,
 * whether `done` went, and per step of the run (in the order GET /runs/{jobId} lists them, the
 * canvas's, which never changes) what of it went: nothing, its start, its end, or its end and its
 * output. A reconnect with `Last-Event-ID` decodes it and is sent only what differs from it now, so
 * nothing is lost or repeated, and no clock (of this worker or any other) orders anything. 500
 * steps take 1,000 bits: about 175 characters of base64url.
 */

import { StepStatus } from '../../platform/run-statuses.ts';
import { runStatuses } from '../../schemas/run-words.ts';
import type { Run, RunOutput, RunViewStatus, StepViewStatus } from '../../schemas/runs.ts';
import { isEndStatus, stepQueuedView } from './run-lifecycle.ts';

/** What went of one step: nothing, its start, its end, its end and then its output. */
export const StepSent = { none: 0, started: 1, ended: 2, output: 3 } as const;
export type StepSentState = (typeof StepSent)[keyof typeof StepSent];

/** What the client has been sent of one run. */
export interface SentState {
  status: RunViewStatus | null;
  progress: number;
  done: boolean;
  steps: StepSentState[];
}

/** Nothing sent yet: a first connection, or a `Last-Event-ID` that is not one of this run's. */
export const nothingSent = (stepCount: number): SentState => ({
  status: null,
  progress: 0,
  done: false,
  steps: Array.from({ length: stepCount }, () => StepSent.none),
});

/** The id's layout version: a later layout changes it, and an older id then reads as none. */
const idVersion = 1;
const headerBytes = 6;

/**
 * The id of `state`: base64url of [version, status + 1, progress, done, the step count (2 bytes), 2
 * bits a step]. The count makes an id of a run with another number of steps read as none.
 */
export const encodeEventId = (state: SentState): string => {
  const bytes = new Uint8Array(headerBytes + Math.ceil(state.steps.length / 4));
  bytes[0] = idVersion;
  bytes[1] = state.status === null ? 0 : runStatuses.indexOf(state.status) + 1;
  bytes[2] = state.progress;
  bytes[3] = state.done ? 1 : 0;
  bytes[4] = state.steps.length >> 8;
  bytes[5] = state.steps.length & 0xff;
  state.steps.forEach((sent, i) => {
    bytes[headerBytes + (i >> 2)]! |= sent << ((i & 3) * 2);
  });
  return Buffer.from(bytes).toString('base64url');
};

/**
 * The state an id names, for a run of `stepCount` steps; undefined for anything that is not an id
 * of such a run (garbage, an id of another layout or of a run with another number of steps): the
 * stream then starts from nothing, as a first connection does.
 */
export const decodeEventId = (id: string | undefined, stepCount: number): SentState | undefined => {
  if (id === undefined || !/^[A-Za-z0-9_-]{1,4000}$/.test(id)) return undefined;
  const bytes = Buffer.from(id, 'base64url');
  if (bytes.toString('base64url') !== id) return undefined;
  if (bytes.length !== headerBytes + Math.ceil(stepCount / 4) || bytes[0] !== idVersion) return undefined;
  if ((bytes[4]! << 8) + bytes[5]! !== stepCount) return undefined;
  const statusByte = bytes[1]!;
  const progress = bytes[2]!;
  const done = bytes[3]!;
  if (statusByte > runStatuses.length || progress > 100 || done > 1) return undefined;
  const steps = Array.from(
    { length: stepCount },
    (_, i) => ((bytes[headerBytes + (i >> 2)]! >> ((i & 3) * 2)) & 3) as StepSentState,
  );
  // Bits past the last step are zero in every id this service gives.
  const tail = stepCount % 4 === 0 ? 0 : bytes[bytes.length - 1]! >> ((stepCount % 4) * 2);
  if (tail !== 0) return undefined;
  return {
    status: statusByte === 0 ? null : (runStatuses[statusByte - 1] ?? null),
    progress,
    done: done === 1,
    steps,
  };
};

/** One step's change, as a `step` event carries it: no result (the `output` events and `done` carry those). */
export interface StepEventData {
  node_id: string;
  step_type: string;
  status: StepViewStatus;
  error?: string;
}

export type RunEvent =
  | { event: 'step'; data: StepEventData; state: SentState }
  | { event: 'output'; data: RunOutput; state: SentState }
  | { event: 'status'; data: { status: RunViewStatus; progress: number }; state: SentState };

/** Where a step's status puts it: not started, started, or ended. */
const sentFor = (status: StepViewStatus): StepSentState =>
  status === stepQueuedView ? StepSent.none : status === StepStatus.processing ? StepSent.started : StepSent.ended;

/**
 * The events that bring a client from `sent` to `view`, in order, each with the state after it (its
 * id): each step that moved (in the run's step order; a step that started and ended between two
 * reads gets its end only), then each final step's output that became available, then the status
 * when it or the progress changed. A step never moves back: what went stays sent.
 */
export const eventsFor = (view: Run, sent: SentState): RunEvent[] => {
  const events: RunEvent[] = [];
  let state: SentState = { ...sent, steps: [...sent.steps] };
  const advance = (index: number, to: StepSentState): SentState => {
    const steps = [...state.steps];
    steps[index] = to;
    state = { ...state, steps };
    return state;
  };
  view.steps.forEach((step, index) => {
    const now = sentFor(step.status);
    if (now > (state.steps[index] ?? StepSent.none) && (state.steps[index] ?? StepSent.none) < StepSent.ended) {
      const data: StepEventData = {
        node_id: step.node_id,
        step_type: step.step_type,
        status: step.status,
        ...(step.error !== undefined && { error: step.error }),
      };
      events.push({ event: 'step', data, state: advance(index, now) });
    }
  });
  const indexOf = new Map(view.steps.map((step, index) => [step.node_id, index]));
  for (const output of view.output) {
    const index = indexOf.get(output.node_id);
    if (index === undefined || state.steps[index] !== StepSent.ended) continue;
    events.push({ event: 'output', data: output, state: advance(index, StepSent.output) });
  }
  if (view.status !== state.status || view.progress !== state.progress) {
    state = { ...state, status: view.status, progress: view.progress };
    events.push({ event: 'status', data: { status: view.status, progress: view.progress }, state });
  }
  return events;
};

/** Whether the run has ended: the stream sends `done` and closes. */
export const hasEnded = (view: { status: string }): boolean => isEndStatus(view.status);

/** The state after `done`: a reconnect with its id is told there is nothing more (204). */
export const afterDone = (state: SentState): SentState => ({ ...state, done: true });

/** One event as `text/event-stream` writes it: its name, its id, its data as one JSON line. */
export const formatEvent = (event: string, id: string, data: unknown): string =>
  `event: ${event}\nid: ${id}\ndata: ${JSON.stringify(data)}\n\n`;

/** The stream's last words at the cap: when to reconnect (with the last id as `Last-Event-ID`). */
export const formatRetry = (retryMs: number): string => `retry: ${retryMs}\n\n`;
