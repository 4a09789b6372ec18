/**
 * The body of both run starts (and what a deferred run keeps of it) and of a resume: its own module, apart from the
 * run contract's responses (schemas/runs.ts), so a function that parses or stores a request builds
 * only these schemas.
 */
import * as v from 'valibot';
import { DateTimeSchema, notArray } from './common.ts';
import { messages } from './error-messages.ts';
import { MetadataSchema, TagsSchema } from './run-tags.ts';
import { MultiplierSchema, RunModeSchema } from './run-words.ts';
import { WebhookEventsSchema } from './webhook-events.ts';
import { CallbackSecretSchema } from './webhook-secret.ts';

/** The same key with the same body within 24 hours answers as the first request did. */
export const IdempotencyKeySchema = v.pipe(v.string(), v.minLength(1), v.maxLength(255));

/**
 * Our design: what a start does when its workflow already has a run in progress. `reject` (the
 * default): the contract's 409. `queue`: the run is accepted now, its estimate held, and starts when
 * the runs ahead of it have ended (answer 202). `replace`: the run in progress is cancelled as
 * POST /runs/{jobId}/cancel would, and this one starts first.
 */
export const onConflictChoices = ['reject', 'queue', 'replace'] as const;
export const OnConflictSchema = v.pipe(
  v.picklist(onConflictChoices),
  v.description(
    'Our design: what happens when the workflow already has a run in progress. `reject` (the default): 409, ' +
      'nothing held. `queue`: the run is accepted now with its `jobId`, its estimate held, status `queued`; it ' +
      'starts when the runs accepted before it have ended (answer 202 with `queuePosition` and `queuedBehind`; at ' +
      'most 100 wait per workflow). `replace`: the run in progress is cancelled as Cancel a run would, and this ' +
      'one starts ahead of any queued runs (the answer names `replaced`). With no run in progress all three start ' +
      'at once.',
  ),
);
export type OnConflict = v.InferOutput<typeof OnConflictSchema>;

/**
 * Our design: the latest time a run may start (a date-time, at most 7 days ahead, 24 hours for a
 * deferred run whose `inputs` name uploaded files). One schema for every start that can wait: a
 * queued run (`onConflict: "queue"`) not started by then ends `cancelled`; a deferred run not
 * dispatched by then is `expired`. Its bounds depend on the time of the request, so they are
 * checked by the start (a 422, functions/domain/deferred-run-lifetime.ts), not here.
 */
export const StartBySchema = v.pipe(
  DateTimeSchema,
  v.description(
    'Our design, with `defer: true` or `onConflict: "queue"`: the latest time the run may start (ISO 8601). A ' +
      'deferred run not started by then becomes `expired`; a run still queued behind another then ends ' +
      '`cancelled`; either holding nothing. Replaces the default 24 hours. Must lie in the future and at most 7 ' +
      'days ahead (at most 24 hours ahead for a deferred run whose `inputs` name an uploaded file); otherwise 422.',
  ),
);

/** `deadlineSeconds`' bounds: one second to one day (a longer run has no deadline). */
export const deadlineSecondsBounds = { min: 1, max: 24 * 3600 } as const;

/** Our design: the run's deadline in seconds from its start (functions/domain/run-deadline.ts). */
export const DeadlineSecondsSchema = v.pipe(
  v.number(),
  v.integer(),
  v.minValue(deadlineSecondsBounds.min),
  v.maxValue(deadlineSecondsBounds.max),
  v.description(
    'Our design: a run still in progress this many seconds after its start (a deferred run: after its dispatch) ' +
      'ends `cancelled` with `endReason: "deadline"`, as a cancel would end it: finished steps stay charged, a ' +
      'step in flight is never charged, and `run.cancelled` is sent. Enforced within 10 seconds of the deadline ' +
      'when it is at most 15 minutes away, within a minute otherwise. 1 to 86,400.',
  ),
);

/**
 * Body of both run starts; every field optional, and a missing body means `{}`. The `callbackUrl`
 * message is the spec's 422 message, so a handler can answer with the message as is.
 */
export const RunRequestSchema = notArray(
  v.object({
    /**
     * Replaces a step's value for this run, keyed by the step's `config.apiInputKey`. A key matching
     * no step (the empty one included) is the spec's 422; a value may be empty. A file step's value
     * is a `fileId` or an https URL (functions/app/run-inputs.ts).
     */
    inputs: v.optional(notArray(v.record(v.string(), v.string()))),
    /** `draft`: cheaper pass; `preview` behaves like `production`. */
    mode: v.optional(RunModeSchema, 'production'),
    /** Queue the run to start later (answer 202). */
    defer: v.optional(v.boolean(), false),
    /** Only with `defer`: the price multiplier the deferred run waits for. */
    maxMultiplier: v.optional(MultiplierSchema, 0.7),
    /** https URL to receive the run-finished webhook. */
    callbackUrl: v.optional(
      v.pipe(
        v.string(messages.callbackUrlInvalid),
        v.url(messages.callbackUrlInvalid),
        v.startsWith('https://', messages.callbackUrlInvalid),
      ),
    ),
    /** When set, each webhook is signed with it; an empty secret would sign with nothing (schemas/webhook-secret.ts). */
    callbackSecret: v.optional(CallbackSecretSchema),
    /** Our design: the service issues a `whsec_` secret, answered once in the start's answer. */
    generateCallbackSecret: v.optional(
      v.pipe(
        v.boolean(),
        v.description(
          'Our design: `true` asks the service to issue the webhook secret (a Standard Webhooks `whsec_` secret of ' +
            '32 random bytes), answered once as `callbackSecret` in this answer (and again to a retry with the same ' +
            '`Idempotency-Key`). Needs `callbackUrl`; not with `callbackSecret`.',
        ),
      ),
    ),
    /** Our design: the caller's own pairs, echoed wherever the run is shown (schemas/run-tags.ts). */
    metadata: v.optional(MetadataSchema),
    /** Our design: labels to find the run by (`GET /runs?tag=`), echoed wherever it is shown. */
    tags: v.optional(TagsSchema),
    /** Our design: the lifecycle events to send to `callbackUrl` (schemas/webhook-events.ts). */
    webhookEvents: v.optional(WebhookEventsSchema),
    /** Our design: what a start meeting a run in progress does; absent reads as `reject`. */
    onConflict: v.optional(OnConflictSchema),
    /** Our design: a deferred or queued run not started by then expires or is cancelled (functions/domain/deferred-run-lifetime.ts). */
    startBy: v.optional(StartBySchema),
    /** Our design: the run ends `cancelled` (`endReason: "deadline"`) if still in progress this long after its start. */
    deadlineSeconds: v.optional(DeadlineSecondsSchema),
    /** Our design: the workflow version to run (GET /workflows/{id}/versions); absent, the latest. */
    version: v.optional(
      v.pipe(
        v.number(),
        v.integer(),
        v.minValue(1),
        v.description(
          'Our design: the version of the workflow to run (`GET /workflows/{id}/versions`); absent, its latest. ' +
            'The run keeps it to its end, whatever versions are made meanwhile.',
        ),
      ),
    ),
  }),
);
export type RunRequest = v.InferOutput<typeof RunRequestSchema>;
export type RunRequestInput = v.InferInput<typeof RunRequestSchema>;

/**
 * Body of POST /runs/{jobId}/resume (our design), every field optional: the run start's
 * `inputs` (applied only to the steps that run again; a value for a carried-over step is ignored)
 * and its webhook (`callbackUrl`, `callbackSecret`: the new run's own; the original's is not reused).
 * The new run keeps the original's mode; it is never deferred.
 */
export const ResumeRunRequestSchema = notArray(
  v.object({
    inputs: RunRequestSchema.entries.inputs,
    callbackUrl: RunRequestSchema.entries.callbackUrl,
    callbackSecret: RunRequestSchema.entries.callbackSecret,
    generateCallbackSecret: RunRequestSchema.entries.generateCallbackSecret,
    webhookEvents: RunRequestSchema.entries.webhookEvents,
    /** The new run's own deadline, from its start; the original's is not reused. */
    deadlineSeconds: RunRequestSchema.entries.deadlineSeconds,
    onConflict: RunRequestSchema.entries.onConflict,
    startBy: RunRequestSchema.entries.startBy,
  }),
);
export type ResumeRunRequest = v.InferOutput<typeof ResumeRunRequestSchema>;
