/**
 * Runs and their steps (RUN#<jobId>): the run item, its tag and batch entries, what each reader
 * picks of it, and its steps. One family of the stored items: see item.ts for how every item is
 * read and written.
 */
import * as v from 'valibot';
import { endReasons, LicenceModelSchema, RunModeSchema } from '../../../schemas/run-words.ts';
import { StepAttemptSchema, StepLogsSchema } from '../../../schemas/step-attempts.ts';
import { LifecycleEventSchema } from '../../../schemas/webhook-events.ts';
import { storedRunStatuses, storedStepStatuses } from '../../domain/run-lifecycle.ts';
import { counter, hundredths, storedItem } from './item.ts';

/** Stored statuses of a run: `claimed` is only how a queued run with a started step reads. */
const RunItemStatusSchema = v.picklist(storedRunStatuses);

/**
 * A file a run's `inputs` handed a loader step (functions/app/run-inputs.ts): the run's own copy of
 * an upload, under its team's prefix, so the upload expiring or being deleted changes nothing.
 */
export const InputFileSchema = v.object({
  kind: v.literal('file'),
  key: v.string(),
  name: v.optional(v.string()),
  contentType: v.string(),
  bytes: v.number(),
  availability: v.literal('ready'),
});
export type InputFile = v.InferOutput<typeof InputFileSchema>;

/** An upload a run start checked (functions/app/run-inputs.ts): the object to copy, only if still the one checked (`etag`). */
export const CheckedUploadSchema = v.object({
  fileId: v.string(),
  name: v.string(),
  contentType: v.string(),
  size: v.number(),
  etag: v.string(),
});
export type CheckedUploadRecord = v.InferOutput<typeof CheckedUploadSchema>;

/** The run item (functions/store/run/runs.ts `startRun`), with its counters and its hold. */
export const RunItemSchema = v.object({
  jobId: v.string(),
  teamId: v.string(),
  keyId: v.string(),
  workflowId: v.string(),
  /** The version of its workflow it runs (pinned by its start, else the latest then); a run from before versions ran version 1. */
  workflowVersion: v.optional(v.number(), 1),
  projectId: v.string(),
  status: RunItemStatusSchema,
  mode: RunModeSchema,
  inputs: v.record(v.string(), v.string()),
  /** The run's own copy of each upload an `inputs` key named (a `fileId`), by that key; a URL input has none. */
  inputFiles: v.optional(v.record(v.string(), InputFileSchema), {}),
  callbackUrl: v.optional(v.string()),
  /** The key its webhook is signed with; only the webhook worker reads it. */
  callbackSecret: v.optional(v.string()),
  /** The deferred run it came from, if any. */
  deferredJobId: v.optional(v.string()),
  /** The failed or stopped run it resumes (functions/app/resume-run.ts), if any. */
  resumedFrom: v.optional(v.string()),
  /** The batch that started it (POST /runs/batch), if any; bulk cancel filters on this name. */
  batchId: v.optional(v.string()),
  /** The calendar month (UTC) whose key spend the run's hold was added to. */
  spendMonth: v.string(),
  /** The whole hold taken at the start; the team's `held` carries it until the run ends. */
  estimateHundredths: hundredths,
  /** What is still held for the run's unfinished steps. */
  heldHundredths: hundredths,
  chargedHundredths: hundredths,
  /** Each step's share of the estimate, by node id. */
  stepEstimates: v.record(v.string(), hundredths),
  /** The price multiplier the estimate was priced at: a step's charge for the work it did is priced at it too. */
  priceMultiplier: v.optional(v.number()),
  stepsTotal: v.number(),
  stepsCompleted: counter,
  stepsSkipped: counter,
  /**
   * The steps counted on the run (their charge moved, their output part of the run). A step's
   * output is published by this count, which is conditional on the run being in progress.
   */
  doneSteps: v.optional(v.set(v.string()), () => new Set<string>()),
  createdAt: v.string(),
  /** Set by its end (functions/store/run/ledger.ts). */
  endedAt: v.optional(v.string()),
  /**
   * What it charged in all (its estimate less what its end released), set by its end for its list
   * entry: the list index (GSI5) does not project the per-step `chargedHundredths`.
   */
  finalChargedHundredths: v.optional(hundredths),
  /**
   * Set when the run's hold, the team's settlement and the workflow's lock are done with; a run
   * ended with a model step in flight is ended (its status) before it is finalized.
   */
  finalizedAt: v.optional(v.string()),
  /** The sweep's re-sends of its root steps that the queue refused, while it stays queued. */
  sweepRefusals: counter,
  /** The caller's own pairs and tags (schemas/run-tags.ts), checked at the start; absent when none were given. */
  metadata: v.optional(v.record(v.string(), v.string())),
  tags: v.optional(v.array(v.string())),
  /**
   * The lifecycle events its start chose (schemas/webhook-events.ts); absent when it chose none, so
   * a run written before them sends its end event only, as it always did.
   */
  webhookEvents: v.optional(v.array(LifecycleEventSchema)),
  /**
   * With a step event chosen: the steps whose ends may give one, the first 50 it runs in the
   * workflow's order (functions/domain/lifecycle-webhooks.ts `eventfulSteps`); a step's end is marked
   * only if it is one of them, so a wide run's other steps never reach the events' consumer.
   */
  eventSteps: v.optional(v.array(v.string())),
  /**
   * True when it chose `run.started`: the mark the lifecycle webhooks' stream filter passes its insert
   * on (platform/definitions.ts `lifecycleWebhooksMapping`); no other read needs it.
   */
  notifyStart: v.optional(v.literal(true)),
  /** When it must have ended (its start's `deadlineSeconds`, functions/domain/run-deadline.ts); absent without one. */
  deadlineAt: v.optional(v.string()),
  /** Why it ended, when its status alone does not say (`deadline`); written by that end. */
  endReason: v.optional(v.picklist(endReasons)),
  /**
   * While it is `waiting` (functions/domain/workflow-queue.ts): its queue entry's sort key, and when
   * its wait ends (its `startBy`, or 24 hours after it was accepted); removed when it starts.
   */
  queueOrder: v.optional(v.string()),
  waitUntil: v.optional(v.string()),
  /**
   * Its charged model steps, one entry each (`modelChargeEntry` in functions/domain/usage.ts), added
   * by the count that charges the step: what its settlement splits by model for the usage rollups.
   */
  modelCharges: v.optional(v.set(v.string())),
});
export type RunItem = v.InferOutput<typeof RunItemSchema>;

/** The run item as its writers give it (functions/store/run/): the run's schema, and the agent for operators. */
export const storedRun = storedItem(RunItemSchema, ['agentId']);

/**
 * A run's entry in its team's list (GSI5, functions/store/run-list.ts): only what the index projects.
 * `endedAt` and `finalChargedHundredths` are set when the run ends.
 */
export const RunListEntrySchema = v.pick(RunItemSchema, [
  'jobId',
  'workflowId',
  'status',
  'mode',
  'createdAt',
  'estimateHundredths',
  'endedAt',
  'finalChargedHundredths',
  'deferredJobId',
  'metadata',
  'tags',
  'resumedFrom',
]);
export type RunListEntry = v.InferOutput<typeof RunListEntrySchema>;

/** What the operator events read of a run item's stream image (functions/store/operator-event-bus.ts). */
export const RunEventImageSchema = v.pick(RunItemSchema, [
  'jobId',
  'teamId',
  'projectId',
  'workflowId',
  'mode',
  'status',
  'stepsTotal',
  'stepsCompleted',
  'stepsSkipped',
  'estimateHundredths',
  'chargedHundredths',
  'createdAt',
  'endedAt',
  'metadata',
  'tags',
]);

/**
 * A run's entry under one of its tags (functions/store/run/run-tags.ts, `RUNTAG#<team>#<tag>`):
 * written by the run's start beside the run, never changed, kept as long as the run (`ttl`). What
 * GET /runs?tag= reads of it is the run to read and its workflow (a key's workflows filter on it).
 */
export const RunTagEntrySchema = v.object({ jobId: v.string(), workflowId: v.string() });
/** The tag entry, with its team, tag and start for operators. */
export const storedRunTag = storedItem(RunTagEntrySchema, ['teamId', 'tag', 'createdAt']);

/**
 * A run's entry under the batch that started it (functions/store/run/run-tags.ts, `RUNBATCH#<team>#<batch>`):
 * a tag entry's shape, written by the run's start beside the run, kept as long as the run.
 */
export const storedRunBatch = storedItem(RunTagEntrySchema, ['teamId', 'batchId', 'createdAt']);

/** What the webhook worker reads of the run item: where its webhook goes, its signing secret, its start. */
export const RunCallbackSchema = v.pick(RunItemSchema, ['callbackUrl', 'callbackSecret', 'createdAt']);

/** What a run's delivery log reads of the run item: whose it is, whether and when it ended, its callback. */
export const RunDeliverySubjectSchema = v.pick(RunItemSchema, [
  'webhookEvents',
  'teamId',
  'workflowId',
  'status',
  'callbackUrl',
  'createdAt',
  'endedAt',
]);

/** A model step's job at an asynchronous provider, as its step item keeps it. */
const ProviderJobSchema = v.object({
  provider: v.string(),
  model: v.string(),
  /** Whose key the job runs on: the team's own (a connection named by the provider) or the stage's. */
  credentials: v.picklist(['team', 'stage']),
  attempt: v.number(),
  tokenHash: v.string(),
  id: v.optional(v.string()),
  submittedAt: v.optional(v.string()),
  deadlineAt: v.string(),
  /** When the intent was written: the job, if the provider took it, was created soon after. */
  intendedAt: v.optional(v.string()),
  /**
   * Earlier claims' intents whose job was never recorded (their worker died between the submit
   * and the record): each may have started a job, looked for at the provider and cancelled.
   */
  superseded: v.optional(v.array(v.object({ tokenHash: v.string(), intendedAt: v.string() }))),
});

/**
 * A step item (functions/store/run/steps.ts): written when a model step is claimed (`processing`)
 * and when any step finishes; a step without one has not started.
 */
export const StepItemSchema = v.object({
  nodeId: v.string(),
  status: v.picklist(storedStepStatuses),
  /** Values per output handle (completed steps). */
  outputs: v.optional(v.record(v.string(), v.unknown())),
  model: v.nullish(v.object({ provider: v.string(), model: v.string() })),
  /** The model's licence as it stood when the step ran. */
  licence: v.nullish(LicenceModelSchema),
  error: v.optional(v.string()),
  startedAt: v.optional(v.string()),
  /** What its completion counted on the run (0 when it was not charged). */
  chargeHundredths: counter,
  /** A model step's claims so far, and until when the latest is leased (functions/store/run/steps.ts). */
  attempts: v.optional(v.number()),
  leaseUntil: v.optional(v.string()),
  /**
   * A model step's job at an asynchronous provider (functions/store/run/provider-jobs.ts): written
   * before the submit (no `id` yet: the intent, its webhook token's hash), then its id once the
   * provider accepted it. Belongs to the claim `attempt` that submitted it.
   */
  providerJob: v.optional(ProviderJobSchema),
  /**
   * The jobs of earlier claims this step's later claim replaced (a worker lost while its job ran, or
   * before it recorded the job's id), oldest first: the only jobs a provider's webhook may have
   * cancelled (functions/app/provider-webhook.ts). At most one per claim, so as many as the step's claims.
   */
  supersededJobs: v.optional(v.array(ProviderJobSchema)),
  /** Times a busy provider (429, 5xx, a timeout) was asked again for this step. */
  providerTries: v.optional(v.number()),
  /** An unclaimed step's failed executions so far (functions/store/run/steps.ts `countFailedExecution`). */
  failures: v.optional(v.number()),
  /** When it finished (set by its end); a step event's body says it (functions/app/lifecycle-webhook-body.ts). */
  endedAt: v.optional(v.string()),
  /**
   * True on the end of a step whose run chose the event it gives: the mark the lifecycle events'
   * stream filter passes its change on (platform/definitions.ts); no other read needs it.
   */
  notify: v.optional(v.literal(true)),
  /**
   * The step's attempts, oldest first (functions/domain/step-history.ts): appended by the writes
   * that end an attempt (a busy provider's try, a failed execution, the step's end), never by one of
   * their own; bounded by the step's retry limits.
   */
  attemptLog: v.optional(v.array(StepAttemptSchema)),
  /** Its logs, each stream cut to its cap (functions/domain/step-history.ts); written with its end. */
  logs: v.optional(StepLogsSchema),
});
export type StepItem = v.InferOutput<typeof StepItemSchema>;

/**
 * The step item as its writers give it: the step's schema, and (a step a resume carried over, for
 * operators) the run it was taken from.
 */
export const storedStep = storedItem(StepItemSchema, ['carriedFrom']);

/** An entry of the sharded index of runs left queued (GSI1 QUEUEDRUNS#<shard>): a run item's. */
export const QueuedRunEntrySchema = v.pick(RunItemSchema, ['jobId', 'workflowId', 'status', 'teamId']);
