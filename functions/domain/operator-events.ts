/**
 * Operator events: the run lifecycle as EventBridge events on the stage's bus, read from the
 * table's stream (the old and new image of each changed item), never written by the run itself.
 * An operators' channel: callers are told only by the spec's webhook.
 *
 * One changed item gives at most one event. Each event's `detail.eventId` names the transition
 * (`<id>:<transition>`), which happens once per run or deferred run, so a redelivered stream record
 * gives the same id: consumers deduplicate on it (delivery is at least once). Only the fields listed
 * below reach an event; never a run's inputs, callback URL or secret, nor a deferred run's request.
 */

import { operatorEventItems } from '../../platform/definitions.ts';
import { endStatuses } from './workflow-lock.ts';

/** The `source` of every operator event. */
export const operatorEventSource = 'workflow-run-api';

/** The version of the detail schema (`detail.version`): a new field keeps it, a changed or removed one bumps it. */
export const operatorEventVersion = 1 as const;

/** The `detail-type` of each event. */
export const operatorDetailTypes = {
  runStarted: 'Run Started',
  runFinished: 'Run Finished',
  deferredDispatched: 'Deferred Run Dispatched',
  deferredExpired: 'Deferred Run Expired',
  deferredCancelled: 'Deferred Run Cancelled',
} as const;

interface DetailBase {
  version: typeof operatorEventVersion;
  /** `<jobId or deferredJobId>:<transition>`: the same for every delivery of one transition. */
  eventId: string;
  teamId: string;
  workflowId: string;
}

export interface RunStartedDetail extends DetailBase {
  jobId: string;
  projectId: string;
  mode: string;
  stepsTotal: number;
  /** The hold taken at the start, in hundredths of a credit, and as credits with two decimals. */
  estimateHundredths: number;
  estimateCredits: string;
  createdAt: string;
}

export interface RunFinishedDetail extends DetailBase {
  jobId: string;
  projectId: string;
  mode: string;
  /** `completed`, `failed`, `cancelled` or `stopped`. */
  status: string;
  /** What the run was charged, in hundredths of a credit, and as credits with two decimals ("12.34"). */
  creditsChargedHundredths: number;
  creditsCharged: string;
  stepsTotal: number;
  stepsCompleted: number;
  stepsSkipped: number;
  createdAt: string;
  endedAt: string | null;
}

export interface DeferredRunDetail extends DetailBase {
  deferredJobId: string;
  /** `dispatched`, `expired` or `cancelled`. */
  status: string;
  maxMultiplier: number;
  createdAt: string;
  expiresAt: string;
  /** When it left the waiting state. */
  movedAt: string | null;
  /** The run it became (dispatched only), else null. */
  jobId: string | null;
}

export type OperatorEvent =
  | { detailType: typeof operatorDetailTypes.runStarted; time: string; detail: RunStartedDetail }
  | { detailType: typeof operatorDetailTypes.runFinished; time: string; detail: RunFinishedDetail }
  | {
      detailType:
        | typeof operatorDetailTypes.deferredDispatched
        | typeof operatorDetailTypes.deferredExpired
        | typeof operatorDetailTypes.deferredCancelled;
      time: string;
      detail: DeferredRunDetail;
    };

/** Hundredths as credits with two decimals, exactly (no floating point): 1234 → "12.34". */
export const creditsText = (hundredths: number): string => {
  const sign = hundredths < 0 ? '-' : '';
  const whole = Math.abs(hundredths);
  return `${sign}${Math.trunc(whole / 100)}.${String(whole % 100).padStart(2, '0')}`;
};

type Image = Record<string, unknown> | undefined;

const text = (image: Record<string, unknown>, name: string): string =>
  typeof image[name] === 'string' ? (image[name] as string) : '';
const textOrNull = (image: Record<string, unknown>, name: string): string | null =>
  typeof image[name] === 'string' ? (image[name] as string) : null;
const count = (image: Record<string, unknown>, name: string): number =>
  typeof image[name] === 'number' ? (image[name] as number) : 0;

const isEnded = (status: unknown) => endStatuses.includes(status as (typeof endStatuses)[number]);

const runEvent = (old: Image, now: Record<string, unknown>): OperatorEvent | undefined => {
  const jobId = text(now, 'jobId');
  const base = {
    version: operatorEventVersion,
    jobId,
    teamId: text(now, 'teamId'),
    projectId: text(now, 'projectId'),
    workflowId: text(now, 'workflowId'),
    mode: text(now, 'mode'),
    stepsTotal: count(now, 'stepsTotal'),
    createdAt: text(now, 'createdAt'),
  };
  if (old === undefined) {
    const estimate = count(now, 'estimateHundredths');
    return {
      detailType: operatorDetailTypes.runStarted,
      time: base.createdAt,
      detail: {
        ...base,
        eventId: `${jobId}:run-started`,
        estimateHundredths: estimate,
        estimateCredits: creditsText(estimate),
      },
    };
  }
  if (isEnded(old.status) || !isEnded(now.status)) return undefined;
  const charged = count(now, 'chargedHundredths');
  const endedAt = textOrNull(now, 'endedAt');
  return {
    detailType: operatorDetailTypes.runFinished,
    time: endedAt ?? base.createdAt,
    detail: {
      ...base,
      eventId: `${jobId}:run-finished`,
      status: text(now, 'status'),
      creditsChargedHundredths: charged,
      creditsCharged: creditsText(charged),
      stepsCompleted: count(now, 'stepsCompleted'),
      stepsSkipped: count(now, 'stepsSkipped'),
      endedAt,
    },
  };
};

const deferredTypes = {
  dispatched: operatorDetailTypes.deferredDispatched,
  expired: operatorDetailTypes.deferredExpired,
  cancelled: operatorDetailTypes.deferredCancelled,
} as const;

const deferredEvent = (old: Image, now: Record<string, unknown>): OperatorEvent | undefined => {
  const status = now.status as keyof typeof deferredTypes;
  if (old?.status !== 'waiting' || !Object.hasOwn(deferredTypes, status)) return undefined;
  const deferredJobId = text(now, 'deferredJobId');
  const movedAt = textOrNull(now, 'movedAt');
  return {
    detailType: deferredTypes[status],
    time: movedAt ?? text(now, 'createdAt'),
    detail: {
      version: operatorEventVersion,
      eventId: `${deferredJobId}:deferred-${status}`,
      deferredJobId,
      teamId: text(now, 'teamId'),
      workflowId: text(now, 'workflowId'),
      status,
      maxMultiplier: count(now, 'maxMultiplier'),
      createdAt: text(now, 'createdAt'),
      expiresAt: text(now, 'expiresAt'),
      movedAt,
      jobId: status === 'dispatched' ? textOrNull(now, 'jobId') : null,
    },
  };
};

/**
 * The operator event one change of an item gives, if any: a run item inserted (Run Started), a
 * run item whose status became an end status (Run Finished), a deferred run that left `waiting`
 * (Dispatched, Expired, Cancelled). Removals (TTL) and every other change give none.
 */
export const operatorEventOf = (oldImage: Image, newImage: Image): OperatorEvent | undefined => {
  if (newImage === undefined) return undefined;
  if (newImage.SK === operatorEventItems.run) return runEvent(oldImage, newImage);
  if (newImage.SK === operatorEventItems.deferredRun) return deferredEvent(oldImage, newImage);
  return undefined;
};
