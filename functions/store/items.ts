/**
 * The stored items as the code reads them. Each item is parsed once, where it comes out of
 * DynamoDB (GetItem, BatchGetItem, Query, an update's returned attributes), so the rest of the code
 * works on typed objects; an item without the expected shape is a MalformedItemError naming its key
 * (a bug or a hand-edited item), never a silent undefined. Each schema lists only the fields the
 * code reads (`v.object` drops the others), which keeps parsing cheap on the step path.
 *
 * One schema per item: every read of an item (or of an index entry projected from it, or of the
 * attributes an update returns) parses with its schema or a `v.pick` of it, so a field's type is
 * stated once. Every write is typed by the same schema's input: a Put's item `satisfies
 * StoredItem<typeof storedX>`, an update is built by `itemUpdate(storedX, …)` (item-update.ts).
 * `storedX` pairs the schema with the attributes the item is written with that no read needs.
 * The items are written by the store module of each entity; their keys are built in keys.ts.
 */
import * as v from 'valibot';
import { allScopes } from '../../platform/routes.ts';
import { BulkCancelFilterFieldsSchema, bulkActionStatuses } from '../../schemas/bulk-actions.ts';
import { DeferredRunSchema } from '../../schemas/deferred-runs.ts';
import { deliveryStates, webhookErrorKinds } from '../../schemas/deliveries.ts';
import { fileStates } from '../../schemas/files.ts';
import { StepAttemptSchema, StepLogsSchema } from '../../schemas/run-steps.ts';
import { endReasons, LicenceModelSchema, RunModeSchema, RunRequestSchema } from '../../schemas/runs.ts';
import { uploadContentTypes } from '../../schemas/upload-types.ts';
import { LifecycleEventSchema } from '../../schemas/webhook-events.ts';
import { type WorkflowStep, WorkflowSummarySchema } from '../../schemas/workflows.ts';
import { isExpired } from '../domain/retention.ts';
import { storedRunStatuses, storedStepStatuses } from '../domain/run-lifecycle.ts';
import { ServiceError } from '../errors/define.ts';
import { isRecord } from '../is-record.ts';
import type { Canvas } from '../nodes/catalogue/canvas.ts';

/**
 * A stored item that does not have the shape the code reads: a server error, never the caller's.
 * The message names the key and the first field at fault, never the stored value (it is logged).
 */
export class MalformedItemError extends ServiceError {
  override readonly name = 'MalformedItemError';
  /** `issues`: the schema's; or what is wrong, in words (a version this code does not read). */
  constructor(where: string, issues: readonly v.BaseIssue<unknown>[] | string) {
    if (typeof issues === 'string') {
      super(`Malformed item ${where}: ${issues}`);
      return;
    }
    const first = issues[0];
    const path = first?.path?.map((item) => String(item.key)).join('.') ?? 'the item';
    const fault = first?.received === 'undefined' ? 'missing' : `expected ${first?.expected ?? 'another shape'}`;
    super(`Malformed item ${where}: ${path} ${fault}`);
  }
}

/**
 * `item` as `schema` reads it, or a MalformedItemError naming its key: its own PK and SK, else
 * `key` (for an item read without them, such as the old image in a refusal).
 */
export const parseItem = <TSchema extends v.GenericSchema>(
  schema: TSchema,
  item: Record<string, unknown>,
  key?: { PK: string; SK: string },
): v.InferOutput<TSchema> => {
  const version = itemVersionOf(item);
  const parsed = v.safeParse(schema, item);
  if (parsed.success && readableItemVersions.includes(version as number)) return parsed.output;
  const where =
    typeof item.PK === 'string' && typeof item.SK === 'string'
      ? `${item.PK}|${item.SK}`
      : key
        ? `${key.PK}|${key.SK}`
        : 'without a key';
  if (!parsed.success) throw new MalformedItemError(where, parsed.issues);
  throw new MalformedItemError(
    where,
    `v ${JSON.stringify(version)} is a shape this code does not read (${readableItemVersions.join(', ')})`,
  );
};

/**
 * The item as read, or undefined when there is none or its `ttl` has passed. DynamoDB's TTL deletes
 * an expired item up to a few days late, so every read of an item that expires (a run, its steps
 * and deliveries, an ended deferred run, an idempotency record) goes through this: `batchGet`,
 * `queryAll` and the store's GetItem reads of those items. An expired run reads as a missing one.
 */
export const unexpired = (item: Record<string, unknown> | undefined, now: Date): Record<string, unknown> | undefined =>
  item === undefined || isExpired(item.ttl, now) ? undefined : item;

/**
 * The table's own attributes, which any item may carry beside what its schema reads: its key and
 * its index keys (keys.ts), its kind for operators reading the table (`type`), and when DynamoDB
 * may delete it (`ttl`, epoch seconds: functions/domain/retention.ts).
 */
export interface TableAttributes {
  PK: string;
  SK: string;
  GSI1PK: string;
  GSI1SK: string;
  GSI2PK: string;
  GSI2SK: string;
  GSI3PK: string;
  GSI3SK: string;
  GSI4PK: string;
  GSI4SK: string;
  type: string;
  ttl: number;
  /** The shape version the item was written with (`itemVersion`); none on items written before it. */
  v: number;
}

const tableAttributes: Record<keyof TableAttributes, true> = {
  PK: true,
  SK: true,
  GSI1PK: true,
  GSI1SK: true,
  GSI2PK: true,
  GSI2SK: true,
  GSI3PK: true,
  GSI3SK: true,
  GSI4PK: true,
  GSI4SK: true,
  type: true,
  ttl: true,
  v: true,
};

/**
 * The shape every writer writes (the `v` attribute of each Put's item, set by every update built
 * by `itemUpdate`). A shape changes by expand, then contract (docs/architecture.md, "Changing
 * stored items"): first a deploy whose readers accept the next version beside this one (it is
 * added to `readableItemVersions`) while its writers still write this one; then a deploy that
 * writes the next (this constant moves); a later one drops the old reader. Each deploy can be
 * rolled back to the one before it, whose readers accept everything it wrote.
 */
export const itemVersion = 1;

/**
 * The versions this code reads: 0, the items written before versions existed (no `v`, the same
 * shape as 1), and 1. An item of any other version is a MalformedItemError, never misread.
 */
export const readableItemVersions: readonly number[] = [0, 1];

/**
 * The version an item was written with: its `v`, or 0 for an item written before versions. A
 * refused write's old item comes as attribute values (`{ v: { N: "1" } }`, functions/store/refusals.ts).
 */
export const itemVersionOf = (item: Record<string, unknown>): unknown => {
  const version = item.v;
  if (typeof version === 'object' && version !== null && 'N' in version && typeof version.N === 'string') {
    return Number(version.N);
  }
  return version ?? 0;
};

/** The schema of an item: an object schema, whose entries name the attributes it reads. */
type ItemSchema = v.ObjectSchema<v.ObjectEntries, v.ErrorMessage<v.ObjectIssue> | undefined>;

/**
 * One stored item: the schema every read of it goes through, and the attributes it is written with
 * that no read needs (kept for operators), declared here once so a writer cannot add another.
 */
export interface ItemDefinition<TSchema extends ItemSchema = ItemSchema, TWrittenOnly extends string = string> {
  readonly schema: TSchema;
  readonly writtenOnly: readonly TWrittenOnly[];
}

const storedItem = <TSchema extends ItemSchema, const TWrittenOnly extends string = never>(
  schema: TSchema,
  writtenOnly: readonly TWrittenOnly[] = [],
): ItemDefinition<TSchema, TWrittenOnly> => ({ schema, writtenOnly });

/**
 * What a Put's item is checked against: `{...} satisfies StoredItem<typeof storedRun>`. The item
 * must give every field the schema that parses it requires, each of the type the schema takes, and
 * its written-only attributes; any other field, such as a misspelt optional one, does not compile.
 * The key and index attributes come from spreads (keys.ts), which `satisfies` does not check for excess.
 */
export type StoredItem<TItem extends ItemDefinition> = v.InferInput<TItem['schema']> & {
  [attribute in TItem['writtenOnly'][number]]: unknown;
} & { v: typeof itemVersion } & Partial<TableAttributes>;

/** Every attribute a writer may give an item, as an update writes some of them (item-update.ts). */
export type ItemAttributes<TItem extends ItemDefinition> = v.InferInput<TItem['schema']> & {
  [attribute in TItem['writtenOnly'][number]]?: unknown;
} & Partial<TableAttributes>;

/** Whether `attribute` is one the item's schema reads, one it is declared written with, or the table's own. */
export const isItemAttribute = (item: ItemDefinition, attribute: string): boolean =>
  Object.hasOwn(item.schema.entries, attribute) ||
  item.writtenOnly.includes(attribute) ||
  Object.hasOwn(tableAttributes, attribute);

/** Amounts in hundredths of a credit; a counter the item gains with its first ADD reads 0 before it. */
const hundredths = v.number();
const counter = v.optional(v.number(), 0);

/** The table key of any item, e.g. an entry of a KEYS_ONLY index. */
export const ItemKeySchema = v.object({ PK: v.string(), SK: v.string() });
export type ItemKey = v.InferOutput<typeof ItemKeySchema>;

// Runs and their steps (RUN#<jobId>)

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

// Webhook deliveries (RUN#<jobId>, WEBHOOK#<event>)

/**
 * The delivery item of one webhook event of a run (functions/store/webhook-deliveries.ts) (`RUN#<job>`, `WEBHOOK#<event>`): its state, the
 * attempts counted so far (the only count of attempts: SQS's receive count is never used), and the
 * delivery log, one entry per attempt (five at most). Written once per attempt, on the condition
 * that the attempt before it is the last one recorded, so a redelivered message never counts twice.
 * It is kept as long as its run (`ttl`: the run's start plus the retention).
 */
export const AttemptEntrySchema = v.object({
  attempt: v.number(),
  at: v.string(),
  host: v.string(),
  statusCode: v.optional(v.number()),
  // `dns`, written before refusals read as one kind (an oracle of how names resolve), reads as `refused`.
  error: v.optional(
    v.pipe(
      v.picklist([...webhookErrorKinds, 'dns']),
      v.transform((kind) => (kind === 'dns' ? 'refused' : kind)),
    ),
  ),
  durationMs: v.number(),
  nextAttemptAt: v.optional(v.string()),
});

export const DeliveryItemSchema = v.object({
  state: v.picklist(deliveryStates),
  attempts: v.number(),
  /** The SQS message that recorded the last attempt (its id is the same on every redelivery). */
  lastMessageId: v.optional(v.string()),
  nextAttemptAt: v.optional(v.string()),
  /** The latest attempts, oldest first (`attemptLogLimit` at most). */
  attemptLog: v.optional(v.array(AttemptEntrySchema), () => []),
  /** Set while a redelivery the caller asked for is pending: its attempt is a single one. */
  redeliveryRequestedAt: v.optional(v.string()),
  /** When the latest redelivery was asked for: the next waits a minute after it (functions/domain/redelivery-limits.ts). */
  lastRedeliveryAt: v.optional(v.string()),
  /**
   * The attempt whose POST started and whose outcome is not recorded yet: still set when the next
   * message comes, that POST was cut (a crash mid-send) and is logged as an `interrupted` attempt.
   */
  sending: v.optional(v.object({ attempt: v.number(), at: v.string() })),
});

/**
 * The delivery item as its writer gives it: its schema, and for operators its run, event (and step,
 * for a step event) and end.
 */
export const storedDelivery = storedItem(DeliveryItemSchema, ['jobId', 'event', 'nodeId', 'deliveredAt', 'failedAt']);

/**
 * The step events a run has sent (`RUN#<job>`, `STEPEVENTS`; functions/store/lifecycle-webhook-deliveries.ts):
 * added to once with each step event's delivery item, in one transaction, on the condition that it
 * is below the cap. Kept as long as its run (`ttl`).
 */
export const StepEventCountSchema = v.object({ sent: counter });
export const storedStepEventCount = storedItem(StepEventCountSchema, ['jobId']);

// Deferred runs (DEFERRED#<deferredJobId>)

/** A deferred run (functions/store/deferred-runs.ts); `dispatchedAt` and `jobId` once it started. */
export const DeferredRunItemSchema = v.object({
  deferredJobId: v.string(),
  teamId: v.string(),
  keyId: v.string(),
  workflowId: v.string(),
  status: DeferredRunSchema.entries.status,
  maxMultiplier: v.number(),
  createdAt: v.string(),
  expiresAt: v.string(),
  dispatchedAt: v.nullish(v.string(), null),
  jobId: v.nullish(v.string(), null),
  /** When it left `waiting` (functions/store/deferred-runs.ts `leaveWaiting`). */
  movedAt: v.optional(v.string()),
  /** The run start as the caller sent it, parsed then. */
  request: RunRequestSchema,
  /** The batch that created it (POST /runs/batch), if any: the run it becomes carries it too. */
  batchId: v.optional(v.string()),
  /** Copies made when it was deferred, by a deferred run stored before copies were made at dispatch; the run keeps them. */
  inputFiles: v.optional(v.record(v.string(), InputFileSchema), {}),
  /** The uploads its `inputs` named, as checked when it was deferred: copied for the run it becomes, at dispatch. */
  inputUploads: v.optional(v.record(v.string(), CheckedUploadSchema), {}),
});
export type DeferredRunItem = v.InferOutput<typeof DeferredRunItemSchema>;

export const storedDeferredRun = storedItem(DeferredRunItemSchema);

/** What the operator events read of a deferred run item's stream image (functions/store/operator-event-bus.ts). */
export const DeferredRunEventImageSchema = v.pick(DeferredRunItemSchema, [
  'deferredJobId',
  'teamId',
  'workflowId',
  'status',
  'maxMultiplier',
  'createdAt',
  'expiresAt',
  'movedAt',
  'jobId',
]);

/** A deferred run's entry in its team's list (GSI5): the DeferredRun a caller reads, nothing more. */
export const DeferredListEntrySchema = v.pick(DeferredRunItemSchema, [
  'deferredJobId',
  'workflowId',
  'status',
  'maxMultiplier',
  'createdAt',
  'expiresAt',
  'dispatchedAt',
  'jobId',
]);
export type DeferredListEntry = v.InferOutput<typeof DeferredListEntrySchema>;

/** A signing key of the service's own (list cursors, file links; functions/store/server-secrets.ts): 32 random bytes, base64. */
export const ServerSecretItemSchema = v.object({ secret: v.string() });
export const storedServerSecret = storedItem(ServerSecretItemSchema);

/** An entry of the index of waiting runs by expiry (GSI3), which projects only the id. */
export const ExpiringDeferredRunSchema = v.pick(DeferredRunItemSchema, ['deferredJobId']);

// API keys (APIKEY#<hash>, APIKEYID#<keyId>)

/** What the service knows about a key; never the secret itself. GSI1 projects all of it. */
export const ApiKeyItemSchema = v.object({
  keyId: v.string(),
  teamId: v.string(),
  /** Empty means all scopes (spec section 5). */
  scopes: v.optional(v.array(v.picklist(allScopes)), () => []),
  /** Empty means every workflow of the team. */
  workflowIds: v.optional(v.array(v.string()), () => []),
  /** Monthly credit cap in hundredths, or null for none. */
  monthlyCapHundredths: v.nullish(v.number(), null),
  expiresAt: v.nullish(v.string(), null),
  revokedAt: v.nullish(v.string(), null),
  /** Requests per minute, or null for the default. */
  rateLimitPerMinute: v.nullish(v.number(), null),
  hint: v.string(),
  createdAt: v.string(),
});
export type ApiKeyItem = v.InferOutput<typeof ApiKeyItemSchema>;
export const storedApiKey = storedItem(ApiKeyItemSchema);

/** The pointer from a key's public id to the hash its item is stored under. */
export const ApiKeyIdItemSchema = v.object({ secretHash: v.string() });
/** The pointer, with its team for operators. */
export const storedApiKeyId = storedItem(ApiKeyIdItemSchema, ['teamId']);

// Workflows (summary in the team partition, canvas in WORKFLOW#<id>)

/** A workflow's summary item (functions/store/workflows.ts `workflowItems`). */
export const WorkflowItemSchema = v.object({
  workflowId: v.string(),
  agentId: v.string(),
  projectId: v.string(),
  name: v.string(),
  description: v.nullish(v.string(), null),
  status: v.nullish(WorkflowSummarySchema.entries.status.wrapped, null),
  createdAt: v.string(),
  updatedAt: v.nullish(v.string(), null),
  /** Its latest version; a workflow stored before versions has none and reads as version 1. */
  version: v.optional(v.number(), 1),
});
export type WorkflowItem = v.InferOutput<typeof WorkflowItemSchema>;
/** The summary, with its team (read from its id entry, `IdEntrySchema`) and its step count, for operators. */
export const storedWorkflow = storedItem(WorkflowItemSchema, ['teamId', 'stepsCount']);

/** The canvas is checked for its two lists only: it was validated when the workflow was created. */
const CanvasSchema = v.custom<Canvas>(
  (value) => isRecord(value) && Array.isArray(value.nodes) && Array.isArray(value.edges),
  'not a canvas',
);

/** The latest version's canvas (`version`: a canvas stored before versions reads as version 1). */
export const CanvasItemSchema = v.object({
  teamId: v.string(),
  canvas: CanvasSchema,
  version: v.optional(v.number(), 1),
});
export const storedCanvas = storedItem(CanvasItemSchema, ['workflowId']);

/**
 * One version of a workflow (WORKFLOW#<id>, VERSION#<n>), never changed once written: its canvas,
 * for runs pinned to it, and the steps that made it, for reads. `steps` was validated by the create's
 * schema when it was written; absent for version 1 of a workflow stored before versions.
 */
export const WorkflowVersionItemSchema = v.object({
  teamId: v.string(),
  workflowId: v.string(),
  version: v.number(),
  name: v.string(),
  stepsCount: v.number(),
  createdAt: v.string(),
  canvas: CanvasSchema,
  steps: v.optional(v.array(v.custom<WorkflowStep>(isRecord, 'not a step'))),
});
export type WorkflowVersionItem = v.InferOutput<typeof WorkflowVersionItemSchema>;
export const storedWorkflowVersion = storedItem(WorkflowVersionItemSchema);
/** A version as its list reads it (no canvas, no steps). */
export const ListedWorkflowVersionSchema = v.pick(WorkflowVersionItemSchema, [
  'version',
  'name',
  'stepsCount',
  'createdAt',
]);

// Tenancy (TEAM#<teamId>)

/** A team's own key for a provider: a reference to the secret, never the secret (store/connections.ts). */
const ConnectionRefSchema = v.object({ secretRef: v.string(), endpoint: v.optional(v.string()) });
export type ConnectionRef = v.InferOutput<typeof ConnectionRefSchema>;

/** The team item: its ledger (invariant: balance + held + charged = granted), limits and connections. */
export const TeamItemSchema = v.object({
  balance: counter,
  held: counter,
  charged: counter,
  granted: counter,
  perStepLimitHundredths: v.nullish(v.number(), null),
  connections: v.optional(v.record(v.string(), ConnectionRefSchema), () => ({})),
});
export type TeamItem = v.InferOutput<typeof TeamItemSchema>;
export const storedTeam = storedItem(TeamItemSchema, ['teamId', 'name', 'createdAt']);

/**
 * A team's steps in flight: per step its worker's lease (functions/domain/team-steps.ts), taken
 * before the step runs and removed after it, whatever its end; a lease that ran out is removed by
 * the next refused start.
 */
export const TeamStepsItemSchema = v.object({ slots: v.record(v.string(), v.string()) });
export const storedTeamSteps = storedItem(TeamStepsItemSchema);

/**
 * A key's open event streams: per stream its lease (functions/domain/stream-slots.ts), taken before
 * the stream opens and removed when it ends; a lease that ran out (a function killed mid-stream) is
 * removed by the next refused open. The item expires (`ttl`) once its last lease has run out.
 */
export const StreamSlotsItemSchema = v.object({ slots: v.record(v.string(), v.string()) });
export const storedStreamSlots = storedItem(StreamSlotsItemSchema);

/**
 * A team's stored bytes (functions/store/stored-bytes.ts): by the UTC day they expire, their
 * running total (expired days included until a quota-checked write drops them), and the quota an
 * operator set (else the default).
 */
export const StoredBytesItemSchema = v.object({
  byDay: v.optional(v.record(v.string(), v.number()), () => ({})),
  heldBytes: counter,
  quotaBytes: v.nullish(v.number(), null),
});
export type StoredBytesItem = v.InferOutput<typeof StoredBytesItemSchema>;
export const storedStoredBytes = storedItem(StoredBytesItemSchema);

export const ProjectItemSchema = v.object({
  hardCapHundredths: v.nullish(v.number(), null),
  spentHundredths: counter,
});
/** The project, with its id, name and creation for operators, and its team (read from its id entry). */
export const storedProject = storedItem(ProjectItemSchema, ['projectId', 'teamId', 'name', 'createdAt']);

export const AgentItemSchema = v.object({
  projectId: v.string(),
  activeWorkflowId: v.optional(v.string()),
});
export const storedAgent = storedItem(AgentItemSchema, ['agentId', 'teamId', 'name', 'createdAt']);

/** A key's spend in one month (KEYSPEND#<keyId>). */
export const KeyMonthItemSchema = v.object({ spentHundredths: counter });
export const storedKeyMonth = storedItem(KeyMonthItemSchema);

/** The GSI1 entry that finds a project, agent or workflow by id alone: what is read of it is its team. */
export const IdEntrySchema = v.object({ teamId: v.string() });

// Uploaded files (TEAM#<teamId>, FILE#<fileId>)

/**
 * A file a caller uploads (functions/store/uploads.ts): declared `awaiting_upload`, then settled
 * once, conditionally, to `ready` or `rejected`. Kept 24 hours (`ttl`), as its object is (the
 * bucket's lifecycle rule on `uploads/`); in the team's partition, so another team's id reads as none.
 */
export const UploadItemSchema = v.object({
  fileId: v.string(),
  name: v.string(),
  contentType: v.picklist(uploadContentTypes),
  size: v.number(),
  state: v.picklist(fileStates),
  /** Why it was rejected (`rejected` only). */
  reason: v.optional(v.string()),
  createdAt: v.string(),
  /** When the presigned PUT stops working: an object absent past it will never come. */
  uploadExpiresAt: v.string(),
  /** When the file is deleted if nothing used it (its `ttl`). */
  expiresAt: v.string(),
  /**
   * The ETag of the object that was checked (`ready` only). The PUT URL works until it expires, so
   * the object may be replaced after the check: every later read of it is conditional on this one.
   */
  etag: v.optional(v.string()),
  /** An image's dimensions, read from its header (`ready` images only). */
  width: v.optional(v.number()),
  height: v.optional(v.number()),
});
export type UploadItem = v.InferOutput<typeof UploadItemSchema>;
/** The file item, with the key that declared it, for operators. */
export const storedUpload = storedItem(UploadItemSchema, ['keyId']);

// The rest

/** The workflow's run lock (WFLOCK#<workflowId>), naming the run that holds it, and since when (for operators). */
/**
 * The workflow's run lock (WFLOCK#<workflowId>): `jobId` names the run holding it; `waiting` counts
 * the runs queued behind (functions/domain/workflow-queue.ts). With runs waiting the item outlives
 * its holder (no `jobId`) until the first of them takes it.
 */
export const WorkflowLockItemSchema = v.object({
  jobId: v.optional(v.string()),
  waiting: counter,
  /** Runs ever queued while the queue was not empty: the next one's place in acceptance order. */
  accepted: counter,
});
export const storedWorkflowLock = storedItem(WorkflowLockItemSchema, ['since']);

/** An entry of a workflow's queue (WFQUEUE#<workflowId>): the run waiting. */
export const WorkflowQueueEntrySchema = v.object({ jobId: v.string() });
export const storedWorkflowQueueEntry = storedItem(WorkflowQueueEntrySchema, ['acceptedAt']);

/** An entry of the sharded index of runs left queued (GSI1 QUEUEDRUNS#<shard>): a run item's. */
export const QueuedRunEntrySchema = v.pick(RunItemSchema, ['jobId', 'workflowId', 'status', 'teamId']);

/** A remembered answer to a run start with an Idempotency-Key. */
export const IdempotencyItemSchema = v.object({
  requestHash: v.string(),
  /** `status`: written by answers remembered before the HTTP edge chose it from the body; still read. */
  response: v.object({ status: v.optional(v.number()), body: v.unknown() }),
  /** Epoch seconds after which the key may be used again. */
  ttl: v.number(),
});
export const storedIdempotency = storedItem(IdempotencyItemSchema);

/** The operator-set live multiplier and hourly schedule; null when unset. */
export const PriceItemSchema = v.object({
  multiplier: v.nullish(v.number(), null),
  hourly: v.nullish(v.array(v.number()), null),
});
export const storedPrice = storedItem(PriceItemSchema);

/**
 * A team's webhook endpoint (`TEAM#<team>`, `WHENDPOINT#<id>`; functions/store/webhook-endpoints.ts).
 * Its secret signs every delivery, so it is stored (the table is encrypted at rest) and never
 * answered after its creation or rotation; the secret it replaced signs beside it until
 * `previousSecretUntil`. `disabled` is always written: the operator events' filter matches its change.
 */
export const WebhookEndpointItemSchema = v.object({
  endpointId: v.string(),
  teamId: v.string(),
  url: v.string(),
  events: v.array(v.string()),
  workflowIds: v.optional(v.array(v.string())),
  tags: v.optional(v.array(v.string())),
  description: v.optional(v.string()),
  secret: v.string(),
  previousSecret: v.optional(v.string()),
  previousSecretUntil: v.optional(v.string()),
  disabled: v.boolean(),
  disabledReason: v.optional(v.picklist(['requested', 'failing'])),
  /** When its first failed attempt since its last delivered one was made. */
  failingSince: v.optional(v.string()),
  /** When the failures disabled it (operators read it; the operator event carries it). */
  disabledAt: v.optional(v.string()),
  createdAt: v.string(),
  updatedAt: v.string(),
});
export type WebhookEndpointItem = v.InferOutput<typeof WebhookEndpointItemSchema>;
export const storedWebhookEndpoint = storedItem(WebhookEndpointItemSchema);
/** A team's endpoints under their cap (functions/store/webhook-endpoints.ts `putEndpoint`): per endpoint, its creation time. */
export const EndpointSlotsItemSchema = v.object({ slots: v.record(v.string(), v.string()) });
export const storedEndpointSlots = storedItem(EndpointSlotsItemSchema);
/** What the operator events read of an endpoint's change (never its secrets). */
export const WebhookEndpointEventImageSchema = v.pick(WebhookEndpointItemSchema, [
  'endpointId',
  'teamId',
  'url',
  'disabled',
  'disabledReason',
  'failingSince',
  'disabledAt',
]);

/**
 * One delivery of an endpoint (`WHDELIVERY#<endpoint>`, `DELIVERY#<deliveryId>`): the event, its run,
 * and the attempts as a run's delivery keeps them (`DeliveryItemSchema`); kept as long as its run.
 */
export const EndpointDeliveryItemSchema = v.object({
  ...DeliveryItemSchema.entries,
  deliveryId: v.string(),
  endpointId: v.string(),
  teamId: v.string(),
  event: v.string(),
  jobId: v.optional(v.string()),
  createdAt: v.string(),
  deliveredAt: v.optional(v.string()),
  failedAt: v.optional(v.string()),
});
export type EndpointDeliveryItem = v.InferOutput<typeof EndpointDeliveryItemSchema>;
export const storedEndpointDelivery = storedItem(EndpointDeliveryItemSchema);

/**
 * A team's usage cell (`USAGE#<team>#cell`, `<day>#<combination>`): what the runs settled that UTC
 * day with one workflow, key, first tag ('' for none) and project added (functions/store/usage.ts),
 * and the part of it the `model` grouping's `null` row holds. The day is the sort key's first 10
 * characters.
 */
export const UsageCellItemSchema = v.object({
  workflowId: v.string(),
  keyId: v.string(),
  tag: v.string(),
  projectId: v.string(),
  runs: counter,
  steps: counter,
  chargedHundredths: counter,
  refundedHundredths: counter,
  nullRuns: counter,
  nullSteps: counter,
  nullChargedHundredths: counter,
});
export const storedUsageCell = storedItem(UsageCellItemSchema);

/**
 * A team's usage rollup of one model that charged (`USAGE#<team>#model`, `<day>#<provider/model>`):
 * what the model steps of the runs settled that UTC day charged (functions/store/usage.ts).
 */
export const UsageModelItemSchema = v.object({
  model: v.string(),
  runs: counter,
  steps: counter,
  chargedHundredths: counter,
});
export const storedUsageModel = storedItem(UsageModelItemSchema);

// Bulk actions (BULK#<bulkActionId>)

/**
 * A bulk cancel (functions/app/bulk-cancel.ts): what it cancels (`jobIds`, or `filter` within the
 * key's `workflowIds`), its counts and `page`, the pages done so far: a page's counts are added by
 * the one conditional update that moves `page` on, so a page delivered twice counts nothing twice
 * and one chain of pages runs.
 */
export const BulkActionItemSchema = v.object({
  bulkActionId: v.string(),
  teamId: v.string(),
  keyId: v.string(),
  action: v.picklist(['cancel']),
  status: v.picklist(bulkActionStatuses),
  jobIds: v.optional(v.array(v.string())),
  filter: v.optional(BulkCancelFilterFieldsSchema),
  /** The workflows the key that asked is limited to (empty: all of them). */
  workflowIds: v.array(v.string()),
  matched: counter,
  cancelled: counter,
  skipped: counter,
  failed: counter,
  page: counter,
  /** Where the page after `page` starts (JSON: its phase and start key), kept to send it again. */
  next: v.optional(v.string()),
  createdAt: v.string(),
  finishedAt: v.optional(v.string()),
  ttl: v.number(),
});
export type BulkActionItem = v.InferOutput<typeof BulkActionItemSchema>;
export const storedBulkAction = storedItem(BulkActionItemSchema);

/** The outcomes a target of a bulk action is counted under; `pending` while its cancel is under way. */
export const bulkOutcomes = ['cancelled', 'skipped', 'failed'] as const;
export type BulkOutcome = (typeof bulkOutcomes)[number];

/** One run (or deferred run) a bulk action took up (`BULK#<id>`, `TARGET#<kind>#<id>`), and what became of it. */
export const BulkTargetItemSchema = v.object({
  outcome: v.picklist(['pending', ...bulkOutcomes]),
  /** When it was first taken up: a target that had ended before is not this action's doing. */
  takenAt: v.string(),
  /** While `pending`: the lease of the delivery cancelling it (ISO 8601). */
  until: v.optional(v.string()),
  ttl: v.number(),
});
export type BulkTargetItem = v.InferOutput<typeof BulkTargetItemSchema>;
export const storedBulkTarget = storedItem(BulkTargetItemSchema);
