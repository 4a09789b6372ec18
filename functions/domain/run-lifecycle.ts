/**
 * The run's lifecycle as data: each move between its statuses and its steps' (declared in
 * platform/run-statuses.ts) as a named record, and the pure rules on top. The store builds its conditions from these records
 * (functions/store/run/lifecycle-conditions.ts), docs/architecture.md shows them as a table
 * (checked by test/run-lifecycle.test.ts), and no other file spells a status.
 *
 * To add a state: add it to the status object (platform/run-statuses.ts), to the `from` of the moves that may start from it,
 * and a move that enters it; the public picklists (schemas/runs.ts) must name it too, which the
 * types below check.
 */
import {
  type EndStatus,
  endStatuses,
  type InProgressStatus,
  inProgressStatuses,
  RunStatus,
  StepStatus,
  type StoredRunStatus,
  type StoredStepStatus,
} from '../../platform/run-statuses.ts';
import type { RunViewStatus, StepViewStatus } from '../../schemas/runs.ts';

/** Statuses a caller reads and no item stores. */
export const claimedView = 'claimed' satisfies RunViewStatus;
export const stepQueuedView = 'queued' satisfies StepViewStatus;

// The public picklists (schemas/runs.ts) must name every stored status but `waiting`, which reads
// as `queued`: `satisfies` checks it.
const shownRunStatuses = [...inProgressStatuses, ...endStatuses] as const satisfies readonly RunViewStatus[];
export const storedRunStatuses = [RunStatus.waiting, ...shownRunStatuses] as const;
export const storedStepStatuses = Object.values(StepStatus) satisfies StepViewStatus[];

/** How a counted step finished: both release its successors. */
export type CountedStepStatus = typeof StepStatus.completed | typeof StepStatus.skipped;
/** How a step's item ends. */
export type StepEndStatus = CountedStepStatus | typeof StepStatus.failed;

// The moves

/** What a move does to one of the run's ledgers. */
type Effect = string;

export interface Transition<TStatus extends string> {
  /** Statuses it starts from; `none` when the item does not exist yet. */
  from: readonly (TStatus | 'none')[];
  /** Where it may leave the item (the caller picks one), or `same` for a move that keeps the status. */
  to: readonly TStatus[] | 'same';
  /** What else its condition checks, beside `from`. */
  guard: string;
  counters: Effect;
  hold: Effect;
  lock: Effect;
}

const run = <T extends Transition<StoredRunStatus>>(t: T) => t;
const step = <T extends Transition<StoredStepStatus>>(t: T) => t;

/** Every move of a run item, by name (functions/store/run/ writes each). */
export const runTransitions = {
  queue: run({
    from: ['none'],
    to: [RunStatus.waiting],
    guard:
      'the workflow has a run in progress or runs waiting, fewer than 100; the balance covers the estimate; the caps still allow it',
    counters: 'stepsTotal set, none counted',
    hold: 'takes the estimate from the balance',
    lock: 'waits: the lock counts it',
  }),
  promote: run({
    from: [RunStatus.waiting],
    to: [RunStatus.queued],
    guard: 'the lock is free and counts runs waiting; this run is the first of them',
    counters: 'unchanged',
    hold: 'unchanged',
    lock: 'takes it',
  }),
  cancelWaiting: run({
    from: [RunStatus.waiting],
    to: [RunStatus.cancelled],
    guard: 'none',
    counters: 'unchanged',
    hold: 'releases it all to the balance',
    lock: 'counts one fewer waiting',
  }),
  start: run({
    from: ['none'],
    to: [RunStatus.queued],
    guard: 'the workflow has no lock; the balance covers the estimate; the caps still allow it',
    counters: 'stepsTotal set, none counted',
    hold: 'takes the estimate from the balance',
    lock: 'takes it',
  }),
  countStep: run({
    from: inProgressStatuses,
    to: [RunStatus.processing],
    guard: 'the step not counted yet; the hold covers its charge',
    counters: 'stepsCompleted or stepsSkipped +1',
    hold: 'moves the charge to charged',
    lock: 'keeps it',
  }),
  end: run({
    from: inProgressStatuses,
    to: endStatuses,
    guard: 'the hold as read; not finalized (with the last step: counters as read, not counted)',
    counters: 'the last step counted, when given',
    hold: 'releases the rest to the balance',
    lock: 'frees it (hands it over while runs wait)',
  }),
  close: run({
    from: inProgressStatuses,
    to: endStatuses,
    guard: 'the hold as read; not finalized',
    counters: 'frozen',
    hold: 'frozen until settled',
    lock: 'keeps it until settled',
  }),
  settle: run({
    from: endStatuses,
    to: 'same',
    guard: 'no live claim of its steps; the hold as read; not finalized',
    counters: 'unchanged',
    hold: 'releases the rest to the balance',
    lock: 'frees it (hands it over while runs wait)',
  }),
  countSweepRefusal: run({
    from: [RunStatus.queued],
    to: 'same',
    guard: 'none',
    counters: 'sweepRefusals +1',
    hold: 'unchanged',
    lock: 'keeps it',
  }),
} as const;

/** Every move of a step item, by name. */
export const stepTransitions = {
  claim: step({
    from: ['none', StepStatus.processing],
    to: [StepStatus.processing],
    guard: 'absent, or its lease ran out',
    counters: 'attempts +1',
    hold: 'holds an ended run while leased',
    lock: 'holds an ended run while leased',
  }),
  markStart: step({
    from: ['none'],
    to: [StepStatus.processing],
    guard: 'absent: a step that is not claimed, its node still running after a moment',
    counters: 'none',
    hold: 'unchanged',
    lock: 'unchanged',
  }),
  countFailure: step({
    from: ['none', StepStatus.processing],
    to: [StepStatus.processing],
    guard: 'never claimed',
    counters: 'failures +1',
    hold: 'unchanged',
    lock: 'unchanged',
  }),
  finish: step({
    from: ['none', StepStatus.processing],
    to: [StepStatus.completed, StepStatus.skipped, StepStatus.failed],
    guard: 'claimed: the same attempt; unclaimed: never claimed',
    counters: 'none (the run counts it)',
    hold: 'its end lets an ended run settle',
    lock: 'its end lets an ended run settle',
  }),
  release: step({
    from: [StepStatus.processing],
    to: 'same',
    guard: 'the same attempt',
    counters: 'unchanged',
    hold: 'its lease ends: an ended run may settle',
    lock: 'its lease ends: an ended run may settle',
  }),
  retire: step({
    from: [StepStatus.completed],
    to: [StepStatus.unknown],
    guard: 'its run ended without counting it',
    counters: 'charge 0',
    hold: 'unchanged',
    lock: 'unchanged',
  }),
} as const;

// The rules

/** Whether a run with this stored status is in progress (and so holds its workflow's lock). */
export const isInProgress = (status: unknown): status is InProgressStatus =>
  inProgressStatuses.includes(status as InProgressStatus);

export const isEndStatus = (status: unknown): status is EndStatus => endStatuses.includes(status as EndStatus);

/** Whether a run waits behind its workflow's run in progress (accepted, holding its estimate, not the lock). */
export const isWaiting = (status: unknown): status is typeof RunStatus.waiting => status === RunStatus.waiting;

/** A cancel ends a run `stopped` once a step of it completed, `cancelled` before. */
export const cancelStatus = (stepsCompleted: number): EndStatus =>
  stepsCompleted > 0 ? RunStatus.stopped : RunStatus.cancelled;

/** Steps counted on the run, completed or skipped. */
export const stepsFinished = (counters: { stepsCompleted: number; stepsSkipped: number }) =>
  counters.stepsCompleted + counters.stepsSkipped;

/** A run ends `completed` once every step is counted; a failed step ends it `failed` at once. */
export const isDone = (counters: { stepsCompleted: number; stepsSkipped: number; stepsTotal: number }) =>
  stepsFinished(counters) >= counters.stepsTotal;

/** Whether this counted step is the run's last, so its count may end the run in the same write. */
export const isLastCount = (
  counters: { stepsCompleted: number; stepsSkipped: number; stepsTotal: number },
  status: CountedStepStatus,
) => status === StepStatus.completed && stepsFinished(counters) + 1 === counters.stepsTotal;

/** Progress a caller reads: completed steps over all, in whole percent. */
export const progress = (completed: number, total: number) => (total === 0 ? 0 : Math.floor((completed * 100) / total));

/** A step's end releases its successors when it completed or was skipped (failed ends the run). */
export const releasesSuccessors = (status: string | undefined): status is CountedStepStatus =>
  status === StepStatus.completed || status === StepStatus.skipped;

/** Only a completed step charges, and only it carries outputs. */
export const isCompleted = (status: string | undefined): status is typeof StepStatus.completed =>
  status === StepStatus.completed;

/** A run that has ended but is not finalized yet (a model step of it was in flight at its end). */
export const isUnsettled = (run: { status: string; finalizedAt?: string | undefined }) =>
  isEndStatus(run.status) && run.finalizedAt === undefined;

/** A step item that will not move again on this delivery's account (failed, or retired as unknown). */
export const isDeadEnd = (status: string | undefined) => status === StepStatus.failed || status === StepStatus.unknown;

/** The run status a caller reads: a queued run with a started step reads `claimed`, a waiting one `queued`. */
export const runViewStatus = (status: StoredRunStatus, anyStepInFlight: boolean): RunViewStatus =>
  status === RunStatus.waiting
    ? RunStatus.queued
    : status === RunStatus.queued && anyStepInFlight
      ? claimedView
      : status;

/** The status a run summary (GET /runs) shows: a waiting run reads `queued`. */
export const listedStatus = (status: StoredRunStatus) => (status === RunStatus.waiting ? RunStatus.queued : status);

/**
 * The step status a caller reads. No item: not started, so `queued`, or `skipped` once the run
 * ended. In flight, or finished but not counted: `processing` while the run goes on, `unknown` after.
 */
export const stepViewStatus = (
  runStatus: StoredRunStatus,
  counted: boolean,
  step: { status: StoredStepStatus } | undefined,
): StepViewStatus => {
  const ended = isEndStatus(runStatus);
  if (!step) return ended ? StepStatus.skipped : stepQueuedView;
  const uncounted = step.status === StepStatus.completed && !counted;
  if (step.status === StepStatus.processing || uncounted) return ended ? StepStatus.unknown : StepStatus.processing;
  return step.status;
};

/**
 * A run that ended while a model step was in flight keeps its workflow's lock and its whole hold
 * until that step settles (docs/decisions/runs.md, "A run that has ended takes nothing more in"). A step
 * holds its run while it is claimed (only model steps are) and its lease runs; a released claim
 * (`leaseUntil` set to the epoch) holds nothing.
 */
export interface ClaimState {
  status: string;
  attempts?: number | undefined;
  leaseUntil?: string | undefined;
}

/** Whether a step item is a live claim, which keeps an ended run's lock and hold (ISO times compare as text). */
export const holdsEndedRun = (claim: ClaimState, now: Date): boolean =>
  claim.status === StepStatus.processing &&
  claim.attempts !== undefined &&
  claim.leaseUntil !== undefined &&
  claim.leaseUntil > now.toISOString();

/** The lifecycle as the Markdown table docs/architecture.md shows (a test keeps the two equal). */
export const lifecycleTable = (): string => {
  const rows = [
    ...Object.entries(runTransitions).map(([name, t]) => ['run', name, t] as const),
    ...Object.entries(stepTransitions).map(([name, t]) => ['step', name, t] as const),
  ];
  const cell = (text: string) => text.replaceAll('|', '\\|');
  const list = (statuses: readonly string[]) => statuses.map((s) => `\`${s}\``).join(', ');
  return [
    '| item | move | from | to | guard | counters | hold | lock |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
    ...rows.map(
      ([item, name, t]) =>
        `| ${item} | ${name} | ${list(t.from)} | ${t.to === 'same' ? 'same' : list(t.to)} | ${[t.guard, t.counters, t.hold, t.lock].map(cell).join(' | ')} |`,
    ),
  ].join('\n');
};
