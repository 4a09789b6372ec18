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

import { endStatuses } from '../../platform/run-statuses.ts';

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
  webhookEndpointDisabled: 'Webhook Endpoint Disabled',
} as const;

interface DetailBase {
  version: typeof operatorEventVersion;
  /** `<jobId or deferredJobId>:<transition>`: the same for every delivery of one transition. */
  eventId: string;
  teamId: string;
  workflowId: string;
}

/**
 * A run's `metadata` and `tags` as its start gave them: always present on a run's events,
 * empty when none, so a rule can match on `detail.tags` without testing for the field.
 */
interface RunLabelsDetail {
  metadata: Record<string, string>;
  tags: string[];
}

export interface RunStartedDetail extends DetailBase, RunLabelsDetail {
  jobId: string;
  projectId: string;
  mode: string;
  stepsTotal: number;
  /** The hold taken at the start, in hundredths of a credit, and as credits with two decimals. */
  estimateHundredths: number;
  estimateCredits: string;
  createdAt: string;
}

export interface RunFinishedDetail extends DetailBase, RunLabelsDetail {
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

/** A team's webhook endpoint disabled after every attempt failed for 5 days: never its URL or secret. */
export interface WebhookEndpointDisabledDetail {
  version: typeof operatorEventVersion;
  /** `<endpointId>:disabled:<failingSince>`: once per streak of failures. */
  eventId: string;
  teamId: string;
  endpointId: string;
  /** The URL's host only (its path may carry a token). */
  host: string;
  failingSince: string;
  disabledAt: string;
}

export type OperatorEvent =
  | {
      detailType: typeof operatorDetailTypes.webhookEndpointDisabled;
      time: string;
      detail: WebhookEndpointDisabledDetail;
    }
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

/** What an event reads of a run item's image (its stream image, read by the store with the run item's schema). */
export interface RunImage {
  jobId: string;
  teamId: string;
  projectId: string;
  workflowId: string;
  mode: string;
  status: string;
  stepsTotal: number;
  stepsCompleted: number;
  stepsSkipped: number;
  estimateHundredths: number;
  chargedHundredths: number;
  createdAt: string;
  endedAt?: string;
  metadata?: Record<string, string>;
  tags?: string[];
}

/** What an event reads of a deferred run item's image. */
export interface DeferredRunImage {
  deferredJobId: string;
  teamId: string;
  workflowId: string;
  status: string;
  maxMultiplier: number;
  createdAt: string;
  expiresAt: string;
  movedAt?: string;
  jobId: string | null;
}

/**
 * One change of an item the operator events are about: its old image (none when it was inserted)
 * and its new one, read by functions/store/operator-event-bus.ts (`operatorImagesOf`).
 */
/** What an event reads of a webhook endpoint item's image. */
export interface WebhookEndpointImage {
  endpointId: string;
  teamId: string;
  url: string;
  disabled: boolean;
  disabledReason?: string;
  failingSince?: string;
  disabledAt?: string;
}

export type ItemImages =
  | { item: 'webhookEndpoint'; old: WebhookEndpointImage | undefined; now: WebhookEndpointImage }
  | { item: 'run'; old: RunImage | undefined; now: RunImage }
  | { item: 'deferredRun'; old: DeferredRunImage | undefined; now: DeferredRunImage };

const isEnded = (status: unknown) => endStatuses.includes(status as (typeof endStatuses)[number]);

const runEvent = (old: RunImage | undefined, now: RunImage): OperatorEvent | undefined => {
  const { jobId } = now;
  const base = {
    version: operatorEventVersion,
    jobId,
    teamId: now.teamId,
    projectId: now.projectId,
    workflowId: now.workflowId,
    mode: now.mode,
    stepsTotal: now.stepsTotal,
    createdAt: now.createdAt,
    metadata: now.metadata ?? {},
    tags: now.tags ?? [],
  };
  if (old === undefined) {
    const estimate = now.estimateHundredths;
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
  const charged = now.chargedHundredths;
  const endedAt = now.endedAt ?? null;
  return {
    detailType: operatorDetailTypes.runFinished,
    time: endedAt ?? base.createdAt,
    detail: {
      ...base,
      eventId: `${jobId}:run-finished`,
      status: now.status,
      creditsChargedHundredths: charged,
      creditsCharged: creditsText(charged),
      stepsCompleted: now.stepsCompleted,
      stepsSkipped: now.stepsSkipped,
      endedAt,
    },
  };
};

const deferredTypes = {
  dispatched: operatorDetailTypes.deferredDispatched,
  expired: operatorDetailTypes.deferredExpired,
  cancelled: operatorDetailTypes.deferredCancelled,
} as const;

const deferredEvent = (old: DeferredRunImage | undefined, now: DeferredRunImage): OperatorEvent | undefined => {
  const status = now.status as keyof typeof deferredTypes;
  if (old?.status !== 'waiting' || !Object.hasOwn(deferredTypes, status)) return undefined;
  const { deferredJobId } = now;
  const movedAt = now.movedAt ?? null;
  return {
    detailType: deferredTypes[status],
    time: movedAt ?? now.createdAt,
    detail: {
      version: operatorEventVersion,
      eventId: `${deferredJobId}:deferred-${status}`,
      deferredJobId,
      teamId: now.teamId,
      workflowId: now.workflowId,
      status,
      maxMultiplier: now.maxMultiplier,
      createdAt: now.createdAt,
      expiresAt: now.expiresAt,
      movedAt,
      jobId: status === 'dispatched' ? now.jobId : null,
    },
  };
};

/**
 * The operator event one change of an item gives, if any: a run item inserted (Run Started), a
 * run item whose status became an end status (Run Finished), a deferred run that left `waiting`
 * (Dispatched, Expired, Cancelled), a webhook endpoint its failures disabled (Webhook Endpoint
 * Disabled). Removals (TTL), other items and every other change give none.
 */
const endpointEvent = (old: WebhookEndpointImage | undefined, now: WebhookEndpointImage): OperatorEvent | undefined => {
  if (old?.disabled !== false || !now.disabled || now.disabledReason !== 'failing') return undefined;
  const disabledAt = now.disabledAt ?? now.failingSince ?? '';
  const failingSince = now.failingSince ?? disabledAt;
  return {
    detailType: operatorDetailTypes.webhookEndpointDisabled,
    time: disabledAt,
    detail: {
      version: operatorEventVersion,
      eventId: `${now.endpointId}:disabled:${failingSince}`,
      teamId: now.teamId,
      endpointId: now.endpointId,
      host: URL.canParse(now.url) ? new URL(now.url).host : '',
      failingSince,
      disabledAt,
    },
  };
};

export const operatorEventOf = (change: ItemImages | undefined): OperatorEvent | undefined => {
  if (change?.item === 'webhookEndpoint') return endpointEvent(change.old, change.now);
  if (change?.item === 'run') return runEvent(change.old, change.now);
  if (change?.item === 'deferredRun') return deferredEvent(change.old, change.now);
  return undefined;
};
