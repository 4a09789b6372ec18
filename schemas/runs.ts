/**
 * Runs (spec sections 2.3, 3.1, 4.3 to 4.5, 6): the answers of a run start, the Run as read and
 * as sent by webhook, and the validation failure of a run start. The request (the starts' and a
 * resume's bodies) is schemas/run-request.ts, so a function that parses or stores one does not
 * build these.
 * Requests use `v.object` (unknown fields are ignored), never taking an array for one
 * (`notArray`); responses use `v.strictObject`.
 */
import type { ResponseObject } from 'openapi3-ts/oas31';
import * as v from 'valibot';
import { scopeOf } from '../platform/routes.ts';
import { DateTimeSchema, UuidSchema } from './common.ts';
import {
  type DocumentedParameter,
  jsonResponse,
  type OperationSpec,
  ref,
  storageBusyText,
  uuidPath,
} from './openapi-parts.ts';
import { preferenceAppliedHeader, preferWaitParameter, startLocationHeader } from './prefer-wait.ts';
import { IdempotencyKeySchema, ResumeRunRequestSchema, RunRequestSchema } from './run-request.ts';
import { runEventsOperation } from './run-stream.ts';
import { MetadataSchema, TagSchema, TagsSchema } from './run-tags.ts';
import {
  endReasons,
  idempotencyKeyHeader,
  LicenceModelSchema,
  listedRunStatuses,
  listPageLimits,
  RunModeSchema,
  runStatuses,
  stepStatuses,
} from './run-words.ts';
import { runEvents } from './webhook-events.ts';
import { ValidationIssueSchema } from './workflows.ts';

const RunStatusSchema = v.picklist(runStatuses);
export type RunViewStatus = v.InferOutput<typeof RunStatusSchema>;

const StepStatusSchema = v.picklist(stepStatuses);
export type StepViewStatus = v.InferOutput<typeof StepStatusSchema>;

const EndReasonSchema = v.pipe(
  v.picklist(endReasons),
  v.description(
    'Our design: why the run ended, when its status alone does not say. `deadline`: it was still in progress ' +
      'at its `deadlineSeconds` and was cancelled. Absent otherwise.',
  ),
);

/** Our design: the secret issued for `generateCallbackSecret`, in that start's answer only. */
const IssuedSecretSchema = v.pipe(
  v.string(),
  v.description(
    'Our design: only when the start gave `generateCallbackSecret: true`: the issued `whsec_` secret, shown ' +
      'in this answer only (keep it; no route reads it again).',
  ),
);

/** 200 of a run start: the run is queued and its estimate held. */
export const RunStartedResponseSchema = v.strictObject({
  jobId: UuidSchema,
  workflowId: UuidSchema,
  status: v.literal('queued'),
  estimatedCredits: v.number(),
  stepsCount: v.pipe(v.number(), v.integer(), v.minValue(0)),
  callbackSecret: v.optional(IssuedSecretSchema),
  /** Our design: with `onConflict: "replace"`, the run in progress this start cancelled. */
  replaced: v.optional(
    v.pipe(UuidSchema, v.description('Our design: the run in progress that `onConflict: "replace"` cancelled.')),
  ),
});
export type RunStartedResponse = v.InferOutput<typeof RunStartedResponseSchema>;

/** Our design: where a run waiting behind its workflow's run in progress stands (1 = next). */
export const QueuePositionSchema = v.pipe(
  v.number(),
  v.integer(),
  v.minValue(1),
  v.description('Our design: while the run waits behind another, its place in the workflow queue (1 = next).'),
);
/** Our design: the run a waiting run waits for: the one just ahead of it (the run in progress for the first). */
export const QueuedBehindSchema = v.pipe(
  UuidSchema,
  v.description(
    'Our design: while the run waits, the `jobId` of the run just ahead of it: the run in progress when ' +
      '`queuePosition` is 1, else the queued run before it.',
  ),
);
const queuedFields = { queuePosition: QueuePositionSchema, queuedBehind: QueuedBehindSchema };

/** Our design: 202 of a run start with `onConflict: "queue"` (or a replace still waiting): accepted, waiting. */
export const RunQueuedResponseSchema = v.strictObject({ ...RunStartedResponseSchema.entries, ...queuedFields });
export type RunQueuedResponse = v.InferOutput<typeof RunQueuedResponseSchema>;

/** 202 of a run start with `defer: true`; not a promise the run will start. */
export const RunDeferredResponseSchema = v.strictObject({
  deferred: v.literal(true),
  deferredJobId: UuidSchema,
  workflowId: UuidSchema,
  callbackSecret: v.optional(IssuedSecretSchema),
});
export type RunDeferredResponse = v.InferOutput<typeof RunDeferredResponseSchema>;

/** 200 of a resume: the new run is queued and the estimate of the steps it runs held. */
export const RunResumedResponseSchema = v.strictObject({
  ...RunStartedResponseSchema.entries,
  /** The run it resumes. */
  resumedFrom: UuidSchema,
  /** The steps taken over from it, completed, with their outputs: not run or charged again. */
  carriedSteps: v.array(v.string()),
});
export type RunResumedResponse = v.InferOutput<typeof RunResumedResponseSchema>;

/** Our design: 202 of a resume with `onConflict: "queue"`: the new run waits behind the run in progress. */
export const RunResumeQueuedResponseSchema = v.strictObject({ ...RunResumedResponseSchema.entries, ...queuedFields });

/** 422 of a run start when the workflow fails validation: the one error body without `error`. */
export const RunValidationFailedSchema = v.strictObject({
  success: v.literal(false),
  errors: v.pipe(v.array(ValidationIssueSchema), v.minLength(1)),
});
export type RunValidationFailed = v.InferOutput<typeof RunValidationFailedSchema>;

export const RunStepSchema = v.strictObject({
  node_id: v.string(),
  step_type: v.string(),
  status: StepStatusSchema,
  /** Why the step failed; present only on a failed step. */
  error: v.optional(v.string()),
});
export type RunStep = v.InferOutput<typeof RunStepSchema>;

/** The output's licence: as strict as the strictest model it comes from. */
const outputCommercialUses = ['yes', 'provider_terms', 'unchecked', 'no'] as const;

/** Licence an output ships under. Not legal advice. */
export const LicenceSchema = v.strictObject({
  commercial_use: v.picklist(outputCommercialUses),
  models: v.array(LicenceModelSchema),
});
export type Licence = v.InferOutput<typeof LicenceSchema>;

/** An AI model step an output comes from. */
export const GeneratedBySchema = v.strictObject({
  node_id: v.string(),
  provider: v.string(),
  model: v.nullable(v.string()),
});
export type GeneratedBy = v.InferOutput<typeof GeneratedBySchema>;

const fileAvailabilities = ['ready', 'processing', 'unavailable'] as const;
export type FileAvailability = (typeof fileAvailabilities)[number];

/**
 * Who marks an AI-made file as such: `service`, this service (inside the file where its format
 * carries a mark: functions/nodes/media/marks.ts), or `provider_c2pa`, the provider's signed C2PA
 * manifest, the file kept byte for byte (functions/nodes/media/c2pa.ts). Every AI-made file is also
 * marked in its stored object's metadata, which never changes its bytes.
 */
export const aiMarks = ['service', 'provider_c2pa'] as const;
export type AiMark = (typeof aiMarks)[number];

const AiMarkSchema = v.pipe(
  v.nullable(v.picklist(aiMarks)),
  v.description(
    'Who marks this file as AI-generated. `service`: this service wrote the IPTC digital source type ' +
      '`trainedAlgorithmicMedia` inside the file (PNG, JPEG, WAV, GLB; other formats carry the mark in the ' +
      "stored object's metadata only). `provider_c2pa`: the file carries its provider's signed C2PA manifest " +
      '(Content Credentials), so it is kept byte for byte as the provider gave it and the manifest stays valid; ' +
      "the stored object's metadata marks it too. null: no AI model made it (a file the caller supplied), or it " +
      'was stored before this field existed.',
  ),
);

/**
 * A file inside a run output's `result` (our design of the spec's "file object"). Its `url` is a
 * service-owned copy marked as AI-generated and signed for two hours, never a provider's link:
 * set only when `ready`; while `processing` the copy is still being made (poll again); when
 * `unavailable` the file could not be stored and marked.
 */
export const RunFileSchema = v.variant('availability', [
  v.strictObject({
    availability: v.literal('ready'),
    /** A file link of this API (GET /file-links/…), no key needed: it redirects to the file. */
    url: v.pipe(v.string(), v.url()),
    contentType: v.string(),
    bytes: v.pipe(v.number(), v.integer(), v.minValue(0)),
    /** When the `url` stops working: two hours after the read that gave it. */
    expiresAt: DateTimeSchema,
    aiMark: AiMarkSchema,
  }),
  v.strictObject({
    availability: v.picklist(['processing', 'unavailable']),
    url: v.null(),
    /** Known from the provider when it said; null otherwise. */
    contentType: v.nullable(v.string()),
    bytes: v.null(),
    expiresAt: v.null(),
    aiMark: v.null(),
  }),
]);
export type RunFile = v.InferOutput<typeof RunFileSchema>;

/**
 * What a step produced: one output's value, or an object of them by output handle; a file in it is
 * a RunFile. Stated as a union (a file, files, a string, a number, a boolean, null, an object or an
 * array of JSON) rather than `unknown`, so a client generated from the document reads a file without
 * a cast. Not recursive: generated types of a self-referencing schema break in common generators.
 */
export const RunResultSchema = v.pipe(
  v.union([
    RunFileSchema,
    v.array(RunFileSchema),
    v.string(),
    v.number(),
    v.boolean(),
    v.null(),
    v.record(v.string(), v.unknown()),
    v.array(v.unknown()),
  ]),
  v.description(
    'What a step produced; its shape depends on the node type: one output’s value, or an object of them by ' +
      'output handle. A file in it is a RunFile.',
  ),
);
export type RunResult = v.InferOutput<typeof RunResultSchema>;

export const RunOutputSchema = v.strictObject({
  node_id: v.string(),
  step_type: v.string(),
  result: RunResultSchema,
  /** Absent when no model step is involved. */
  licence: v.optional(LicenceSchema),
  /** True when this output, or any step it comes from, was made by an AI model. */
  ai_generated: v.boolean(),
  /** Absent when no AI model step is involved. */
  generated_by: v.optional(v.array(GeneratedBySchema)),
  /**
   * Our design: present, true, only when this one output is too large for any answer (over 4 MiB of
   * JSON); its `result` is then null. No step of this service makes one.
   */
  result_withheld: v.optional(
    v.pipe(
      v.literal(true),
      v.description(
        'Present only when this output alone is too large for an answer (over 4 MiB); `result` is then null.',
      ),
    ),
  ),
});
export type RunOutput = v.InferOutput<typeof RunOutputSchema>;

const ProgressSchema = v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(100));

/**
 * Our design: a run's outputs are answered a page at a time, so the answer always fits
 * Lambda's 6 MB (functions/domain/run-view-size.ts).
 */
const OutputNextSchema = v.pipe(
  v.string(),
  v.description(
    'Present when more outputs follow this page of `output` (the outputs together would be too large for one ' +
      'answer): pass it as `output_cursor` to Get a run for the next page, unchanged. Absent on the last page.',
  ),
);

/** 200 of GET /runs/{jobId}. */
export const RunSchema = v.strictObject({
  jobId: UuidSchema,
  status: RunStatusSchema,
  /** Completed steps as a percentage. */
  progress: ProgressSchema,
  steps: v.array(RunStepSchema),
  /** From the last steps of the workflow; empty until they finish. */
  output: v.array(RunOutputSchema),
  /** Our design: present when `output` is one page and more outputs follow. */
  output_next: v.optional(OutputNextSchema),
  /** Our design: the run start's `metadata`; absent when it gave none. */
  metadata: v.optional(MetadataSchema),
  /** Our design: the run start's `tags`; absent when it gave none. */
  tags: v.optional(TagsSchema),
  /** Ours: the run this one resumes (POST /runs/{jobId}/resume); absent otherwise. */
  resumedFrom: v.optional(UuidSchema),
  /** Ours: while it waits behind another run (`onConflict: "queue"`); absent otherwise. */
  queuePosition: v.optional(QueuePositionSchema),
  queuedBehind: v.optional(QueuedBehindSchema),
  /** Ours: where to follow the run live (GET /runs/{jobId}/events); absent in webhook bodies. */
  links: v.optional(v.strictObject({ events: v.pipe(v.string(), v.url()) })),
  /** Ours: why it ended, when its status alone does not say (its deadline); absent otherwise. */
  endReason: v.optional(EndReasonSchema),
  /** Ours: the version of its workflow it runs (its start's `version`, else the latest then). */
  workflowVersion: v.optional(
    v.pipe(v.number(), v.integer(), v.minValue(1), v.description('Our design: the version of its workflow it runs.')),
  ),
  /** Ours: the batch that started it (POST /runs/batch); absent otherwise. */
  batchId: v.optional(
    v.pipe(UuidSchema, v.description('Our design: the batch that started it (Start a batch of runs).')),
  ),
});
export type Run = v.InferOutput<typeof RunSchema>;

/** The `status` event of GET /runs/{jobId}/events: the run's status or progress changed. */
export const RunStatusEventSchema = v.strictObject({ status: RunStatusSchema, progress: ProgressSchema });

/**
 * One event of GET /runs/{jobId}/events, as a client reads it: its `event` name, its `id` (the
 * `Last-Event-ID` to resume after it) and its `data` line's JSON, whose schema the name decides.
 */
const runEventOf = <TName extends string, TData extends v.GenericSchema>(event: TName, data: TData, what: string) =>
  v.pipe(v.strictObject({ event: v.literal(event), id: v.string(), data }), v.description(what));
export const RunEventSchema = v.variant('event', [
  runEventOf('step', RunStepSchema, 'A step started or ended (no result).'),
  runEventOf('output', RunOutputSchema, 'A final step’s output, as soon as it is available.'),
  runEventOf('status', RunStatusEventSchema, 'The run’s status or progress changed.'),
  runEventOf('done', RunSchema, 'The final Run, as Get a run answers it; the stream then ends.'),
]);

/**
 * One run in GET /runs: the run as GET /runs/{jobId} answers it without `progress`, `steps` and
 * `output` (read the run for those), plus what the list is for: its workflow, mode, times and money.
 */
export const RunSummarySchema = v.strictObject({
  jobId: UuidSchema,
  workflowId: UuidSchema,
  status: v.picklist(listedRunStatuses),
  mode: RunModeSchema,
  createdAt: DateTimeSchema,
  /** When it ended; null while in progress. */
  endedAt: v.nullable(DateTimeSchema),
  /** Credits held at the start. */
  estimatedCredits: v.number(),
  /** Credits charged in all, known once it ended; null while in progress. */
  chargedCredits: v.nullable(v.number()),
  /** The deferred run it came from, if any. */
  deferredJobId: v.nullable(UuidSchema),
  /** The run start's `metadata`; absent when it gave none. */
  metadata: v.optional(MetadataSchema),
  /** The run start's `tags`; absent when it gave none. */
  tags: v.optional(TagsSchema),
  /** The run a resume started from (POST /runs/{jobId}/resume); absent otherwise. */
  resumedFrom: v.optional(UuidSchema),
});
export type RunSummary = v.InferOutput<typeof RunSummarySchema>;

/** An opaque, signed position in a list; pass it back unchanged, with the same filters. */
const NextCursorSchema = v.pipe(
  v.nullable(v.string()),
  v.description('Pass as `cursor` (with the same filters) for the next page; null on the last page.'),
);

/** 200 of GET /runs: newest first, at most `limit`. */
export const ListRunsResponseSchema = v.strictObject({
  runs: v.array(RunSummarySchema),
  nextCursor: NextCursorSchema,
});
export type ListRunsResponse = v.InferOutput<typeof ListRunsResponseSchema>;

export const webhookHeaderNames = {
  event: 'X-Service-Event',
  /** `sha256=` + hex HMAC-SHA256 of the raw body keyed with `callbackSecret`; only when one was given. */
  signature: 'X-Service-Signature',
} as const;

/**
 * Body of the run-finished webhook (spec section 6): the Run plus `event`. A run that chose
 * `run.started` (schemas/webhook-events.ts) gets this body for it too.
 */
export const WebhookBodySchema = v.strictObject({
  event: v.picklist(runEvents),
  jobId: UuidSchema,
  status: RunStatusSchema,
  progress: v.optional(ProgressSchema),
  steps: v.optional(v.array(RunStepSchema)),
  output: v.optional(v.array(RunOutputSchema)),
  /** Our design: the first page of `output` only; read the rest with Get a run. */
  output_next: v.optional(OutputNextSchema),
  /** Our design: the run start's `metadata`; absent when it gave none. */
  metadata: v.optional(MetadataSchema),
  /** Our design: the run start's `tags`; absent when it gave none. */
  tags: v.optional(TagsSchema),
  resumedFrom: v.optional(UuidSchema),
  /** Our design: why the run ended, when its status alone does not say (its deadline). */
  endReason: v.optional(EndReasonSchema),
});
export type WebhookBody = v.InferOutput<typeof WebhookBodySchema>;

/** The named schemas of the document this module holds; the key is the name under `#/components/schemas/`. */
/** Our design: the Run as Get a run answers it, in a start's answer that waited (`Prefer: wait`) and saw it end. */
const waitedRun = { run: v.optional(RunSchema) };

export const runComponents = {
  RunRequest: RunRequestSchema,
  RunStartedResponse: v.strictObject({ ...RunStartedResponseSchema.entries, ...waitedRun }),
  RunDeferredResponse: RunDeferredResponseSchema,
  ResumeRunRequest: ResumeRunRequestSchema,
  RunResumedResponse: v.strictObject({ ...RunResumedResponseSchema.entries, ...waitedRun }),
  RunQueuedResponse: v.strictObject({ ...RunQueuedResponseSchema.entries, ...waitedRun }),
  RunResumeQueuedResponse: v.strictObject({ ...RunResumeQueuedResponseSchema.entries, ...waitedRun }),
  RunValidationFailed: RunValidationFailedSchema,
  Run: RunSchema,
  RunStep: RunStepSchema,
  RunStatusEvent: RunStatusEventSchema,
  RunEvent: RunEventSchema,
  RunOutput: RunOutputSchema,
  RunResult: RunResultSchema,
  RunFile: RunFileSchema,
  Licence: LicenceSchema,
  LicenceModel: LicenceModelSchema,
  GeneratedBy: GeneratedBySchema,
  WebhookBody: WebhookBodySchema,
  RunMetadata: MetadataSchema,
  RunTags: TagsSchema,
};

/** The named schemas of the list of runs (the document names them after the deferred run). */
export const runListComponents = {
  RunSummary: RunSummarySchema,
  ListRunsResponse: ListRunsResponseSchema,
};

/** The query parameters of the two lists, of runs and of deferred runs (our design): filters, page size and cursor. */
export const listQueryParameters = (statuses: readonly string[]): DocumentedParameter[] => [
  {
    name: 'workflowId',
    in: 'query',
    required: false,
    description: 'Only runs of this workflow. A key limited to other workflows gets an empty page.',
    schema: UuidSchema,
  },
  {
    name: 'status',
    in: 'query',
    required: false,
    description: 'Only runs with this status.',
    schema: { type: 'string', enum: [...statuses] },
  },
  {
    name: 'limit',
    in: 'query',
    required: false,
    description:
      'The most entries on the page. A page can hold fewer (even none) and still have a `nextCursor` when a ' +
      'filter is given: follow `nextCursor` until it is null.',
    schema: { type: 'integer', minimum: 1, maximum: listPageLimits.max, default: listPageLimits.default },
  },
  {
    name: 'cursor',
    in: 'query',
    required: false,
    description:
      'The `nextCursor` of the previous page, unchanged; send the same filters with it (it is bound to them).',
    schema: { type: 'string' },
  },
];

/**
 * GET /runs only: the runs started with this tag, read from an index of their own; with
 * `workflowId` or `status` too, those filter its pages as they filter the list's.
 */
const tagParameter: DocumentedParameter = {
  name: 'tag',
  in: 'query',
  required: false,
  description:
    'Only runs started with this tag (exact, case counts). Combines with `workflowId` and `status`, which then ' +
    'filter its pages as they do the list.',
  schema: TagSchema,
};

/** GET /runs only: the runs a batch started (POST /runs/batch), read from the batch's own entries. */
const batchIdParameter: DocumentedParameter = {
  name: 'batchId',
  in: 'query',
  required: false,
  description:
    'Only runs started by this batch (Start a batch of runs). Combines with `workflowId` and `status` as `tag` ' +
    "does; not with `tag`. Another team's batch lists nothing.",
  schema: UuidSchema,
};

/** The words of the two lists for their 400. */
export const listErrorWords = {
  400: 'A filter, `limit` or `cursor` this list does not take (a cursor of another team or other filters, or altered).',
};

/**
 * The document's examples of a run start, for the first workflow of `createWorkflowExamples`
 * (its `topic` input); test/node-types.int.test.ts posts each.
 */
const runRequestExamples = {
  asBuilt: { summary: 'Run the workflow as built', value: {} },
  draft: {
    summary: 'A cheaper draft with a run input, metadata and tags',
    value: { inputs: { topic: 'sea otters' }, mode: 'draft', metadata: { ticket: 'T-42' }, tags: ['docs-example'] },
  },
};

/** What a start (or resume) with `Prefer: wait` waits for. */
const startWaits =
  'the answer comes when the run ends or N seconds pass, whichever is first; ended, it carries `run`, the Run as ' +
  'Get a run answers it. A deferred run is not waited for (answered at once, without `Preference-Applied`).';

/** The words of a start's (and the resume's) description on `Prefer: wait`. */
const startWaitWords =
  'An optional `Prefer: wait=N` (N from 1 to 25 seconds) answers a short run in one request: when the run ends ' +
  'within N seconds, the answer carries `run`, the Run exactly as Get a run answers it; otherwise it is the ' +
  'answer without `run`, and Get a run (which takes the same header) follows the run. A retry with the same ' +
  '`Idempotency-Key` and the same header waits again and carries the run as it is then.';

/** A start's answer: `Location`, and `Preference-Applied` when it waited. */
const startAnswer = (response: ResponseObject): ResponseObject => ({
  ...response,
  headers: { Location: startLocationHeader, 'Preference-Applied': preferenceAppliedHeader },
});

const runStart = (subject: 'workflow' | 'agent'): OperationSpec => ({
  operationId: subject === 'workflow' ? 'RunWorkflow' : 'RunAgent',
  tag: 'Runs',
  summary: subject === 'workflow' ? 'Run a workflow' : 'Run an agent',
  description: [
    subject === 'workflow'
      ? 'Starts a run of one workflow.'
      : "Runs the agent's active workflow; if it has none active, its newest workflow. " +
        '`workflowId` in the response names the workflow that ran.',
    'The cost is estimated and held from the team credits before anything runs; each step is charged when it ' +
      'finishes. One run in progress per workflow at a time. With `defer: true` the run is queued to start ' +
      'later, when the price multiplier reaches `maxMultiplier` (answer 202).',
    'With `deadlineSeconds`, a run still in progress that long after its start (a deferred run: its dispatch) ' +
      'ends `cancelled` with `endReason: "deadline"`, as a cancel ends it. With `defer: true`, `startBy` is the ' +
      'latest time the deferred run may start (at most 7 days ahead; without it, 24 hours).',
    '`metadata` and `tags` are yours: the Run, its summary in List runs and every webhook body echo them, ' +
      'and List runs filters by a tag (`tag`). They are part of the request an `Idempotency-Key` names.',
    `An optional \`${idempotencyKeyHeader}\` makes a retry safe: the same key with the same request (this ` +
      'endpoint, this id, the same body) within 24 hours answers as the first request did; the same key with ' +
      'another request (another body, or the other run endpoint, or another id) answers 422.',
    startWaitWords,
  ].join('\n\n'),
  parameters: [
    uuidPath('id', subject === 'workflow' ? 'The workflow to run.' : 'The agent whose workflow runs.'),
    preferWaitParameter(startWaits),
    {
      name: idempotencyKeyHeader,
      in: 'header',
      required: false,
      description:
        'Caller-chosen key, one per request: the same key, endpoint, id and body within 24 hours answer as the ' +
        'first request did.',
      schema: IdempotencyKeySchema,
    },
  ],
  requestBody: {
    required: false,
    description: 'Every field is optional; an empty or missing body runs the workflow as built.',
    content: { 'application/json': { schema: ref('RunRequest'), examples: runRequestExamples } },
  },
  responses: {
    200: startAnswer(jsonResponse('The run is queued and its estimate held.', 'RunStartedResponse')),
    202: startAnswer(
      jsonResponse(
        'The run is deferred (`defer: true`; not a promise that it will start), or (`onConflict: "queue"`) accepted ' +
          'and waiting behind the run in progress, its estimate held.',
        'RunDeferredResponse',
        'RunQueuedResponse',
      ),
    ),
    500: jsonResponse('Server failure.', 'ServerError'),
  },
  errorWords: {
    400:
      'The body is not JSON, a field has the wrong type, or `metadata` or `tags` pass a limit: a length, a count, ' +
      "a metadata key outside a tag's characters, a control character in a metadata value (the message names the " +
      'field and the limit); `deadlineSeconds` is not a whole number from 1 to 86,400; `startBy` without ' +
      '`defer: true`.',
    413: 'The body is larger than 64 KiB.',
    402: 'Not enough credits, the project hard cap, the per-step credit limit, or the key monthly credit cap.',
    403: `The key lacks \`${scopeOf(subject === 'workflow' ? 'RunWorkflow' : 'RunAgent')}\`, or is limited to other workflows.`,
    404:
      subject === 'workflow'
        ? 'No such workflow in the team, or it has no canvas.'
        : 'No such agent in the team, no workflow for it, or no canvas.',
    409:
      'The workflow already has a run in progress (`onConflict` `reject`, the default), or its queue holds 100 ' +
      'runs (`onConflict: "queue"`).',
    422:
      "An `inputs` key matches no step, a file step's `inputs` value is not a usable `fileId` or public https URL, " +
      '`callbackUrl` is not https, the workflow fails validation, a step runs only on providers this run may not ' +
      'use, the `Idempotency-Key` was used with another request, or `startBy` is not in the future or lies past ' +
      '`latestStartBy`.',
    503:
      'The key has a monthly cap that could not be checked (the run is refused rather than started ' +
      `unmetered), or: ${storageBusyText}`,
  },
});

/** The operations of the run routes, for the document (schemas/openapi.ts). */
export const runOperations: OperationSpec[] = [
  runStart('workflow'),
  runStart('agent'),
  {
    operationId: 'ListRuns',
    tag: 'Runs',
    summary: 'List runs',
    description:
      'Lists the team runs, newest first, as summaries (no steps or output: Get a run reads those), a page at a ' +
      'time. A key limited to certain workflows sees only their runs. A run reads as `queued` here until a step ' +
      'has finished (Get a run says `claimed` once a worker has taken one). Reading never spends credits.',
    parameters: [...listQueryParameters(listedRunStatuses), tagParameter, batchIdParameter],
    responses: { 200: jsonResponse('A page of runs.', 'ListRunsResponse') },
    errorWords: listErrorWords,
  },
  {
    operationId: 'GetRun',
    tag: 'Runs',
    summary: 'Get a run',
    description:
      'Reads a run status, per-step status and output. Poll until `status` is `completed` or `failed`; a few ' +
      'seconds between reads is enough. Reading never spends credits. A run waiting behind another ' +
      '(`onConflict: "queue"`) reads `queued` with `queuePosition` and `queuedBehind`. When the outputs together ' +
      'are too large ' +
      'for one answer, `output` holds the first of them and `output_next` is present: read the run again with ' +
      '`output_cursor` for the next page, until `output_next` is absent.',
    parameters: [
      uuidPath('jobId', 'The `jobId` returned when the run started.'),
      preferWaitParameter(
        'the answer comes when the run reaches an end status (`completed`, `failed`, `cancelled`, `stopped`) or N ' +
          'seconds pass, whichever is first (at once for a run that has ended).',
      ),
      {
        name: 'output_cursor',
        in: 'query',
        required: false,
        description:
          'The `output_next` of an earlier read of this run: the answer is the run with the next page of `output`.',
        schema: { type: 'string' },
      },
    ],
    responses: {
      200: { ...jsonResponse('The run.', 'Run'), headers: { 'Preference-Applied': preferenceAppliedHeader } },
    },
    errorWords: {
      400: 'An `output_cursor` this run did not give (altered, or of another run).',
      404: 'No such run in the team.',
    },
  },
  runEventsOperation,
  {
    operationId: 'CancelRun',
    tag: 'Runs',
    summary: 'Cancel a run',
    description:
      'Cancels a run that is `queued`, `claimed` or `processing`: its steps stop, nothing more is charged, and ' +
      'the unspent hold is released. A run still waiting behind another (`onConflict: "queue"`) ends `cancelled` ' +
      'with its whole hold released. A `callbackUrl` given at the start receives `run.cancelled`.',
    parameters: [uuidPath('jobId', 'The `jobId` returned when the run started.')],
    responses: {
      200: jsonResponse('The run, now `cancelled`.', 'Run'),
      500: jsonResponse('Server failure.', 'ServerError'),
    },
    errorWords: { 404: 'No such run in the team.', 409: 'The run has already ended.' },
  },
  {
    operationId: 'ResumeRun',
    tag: 'Runs',
    summary: 'Resume a failed or stopped run',
    description: [
      'Starts a new run (a new `jobId`, marked `resumedFrom`) of a `failed` or `stopped` run still kept. Steps ' +
        'that completed in it, and every step they read from, are carried over completed with their outputs, ' +
        'licence and lineage: they are not run or charged again. Every other step runs (failed, skipped, ' +
        '`unknown` or never started, and everything downstream of them). The estimate and the hold cover only ' +
        'the steps that run; every run-start rule applies (one run in progress per workflow, the credit limits, ' +
        'the providers). The original run is unchanged.',
      '`inputs` apply to the steps that run; a value for a carried-over step is ignored. The webhook goes to ' +
        "the `callbackUrl` given here, if any: the original run's is not reused; so does `deadlineSeconds`.",
      `An optional \`${idempotencyKeyHeader}\` works as on a run start (this endpoint, this \`jobId\`, the same body).`,
      startWaitWords.replace('the run ends', 'the new run ends'),
    ].join('\n\n'),
    parameters: [
      uuidPath('jobId', 'The failed or stopped run to resume.'),
      preferWaitParameter(startWaits),
      {
        name: idempotencyKeyHeader,
        in: 'header',
        required: false,
        description:
          'Caller-chosen key, one per request: the same key, endpoint, jobId and body within 24 hours answer as ' +
          'the first request did.',
        schema: IdempotencyKeySchema,
      },
    ],
    requestBody: {
      required: false,
      description: 'Every field is optional; an empty or missing body resumes with the original inputs.',
      content: { 'application/json': { schema: ref('ResumeRunRequest') } },
    },
    responses: {
      200: startAnswer(jsonResponse('The new run is queued and the estimate of its steps held.', 'RunResumedResponse')),
      202: startAnswer(
        jsonResponse(
          'With `onConflict: "queue"`: the new run is accepted and waits behind the run in progress, its estimate held.',
          'RunResumeQueuedResponse',
        ),
      ),
      500: jsonResponse('Server failure.', 'ServerError'),
    },
    errorWords: {
      400: 'The body is not JSON, a field has the wrong type, or `deadlineSeconds` is not a whole number from 1 to 86,400.',
      413: 'The body is larger than 64 KiB.',
      402: 'Not enough credits, the project hard cap, the per-step credit limit, or the key monthly credit cap.',
      403: `The key lacks \`${scopeOf('ResumeRun')}\`.`,
      404: 'No such run in the team (or past its retention).',
      409:
        'The run is not `failed` or `stopped`, its workflow already has a run in progress (`onConflict` `reject`), ' +
        'or its queue holds 100 runs.',
      422:
        "An `inputs` key matches no step, a file step's `inputs` value is not a usable `fileId` or public https " +
        'URL, `callbackUrl` is not https, a step that runs needs a provider this run may not use, or the ' +
        '`Idempotency-Key` was used with another request.',
      503:
        'The key has a monthly cap that could not be checked (the run is refused rather than started ' +
        `unmetered), or: ${storageBusyText}`,
    },
  },
];
