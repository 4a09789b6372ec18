/**
 * The run's words and its few small schemas that modules other than the run's contract read (the
 * stored items, the run list, the run starts' header, the price multiplier, the run stream): its
 * modes and statuses, why it ended, the Idempotency-Key header, the list's page sizes, a
 * multiplier's rule, and a model's licence as a step records it. Apart from schemas/runs.ts, so
 * importing one of them does not build every schema of the run's contract (part of spec sections
 * 2.3 and 4.3 to 4.5: see schemas/runs.ts).
 */
import * as v from 'valibot';
import { DateTimeSchema } from './common.ts';

const runModes = ['production', 'draft', 'preview'] as const;
export const RunModeSchema = v.picklist(runModes);
export type RunMode = v.InferOutput<typeof RunModeSchema>;

export const runStatuses = ['queued', 'claimed', 'processing', 'completed', 'failed', 'cancelled', 'stopped'] as const;

export const stepStatuses = ['queued', 'processing', 'completed', 'failed', 'skipped', 'unknown'] as const;

/** Header carrying the caller's idempotency key on the two run starts (our design, beyond the spec). */
export const idempotencyKeyHeader = 'Idempotency-Key';

/**
 * A price multiplier (our design): at least 0.0001, at most 10, with at most 4 decimals. One rule
 * for a caller's `maxMultiplier` and an operator's multipliers (functions/domain/price-multiplier.ts).
 * Without a floor, `1e-200` reached DynamoDB, which cannot store it (a 500). The decimals are
 * checked on the number's 4-decimal rounding, not `value % 0.0001`, which binary floats get wrong.
 */
export const multiplierBounds = { min: 0.0001, max: 10, decimals: 4 } as const;
export const MultiplierSchema = v.pipe(
  v.number(),
  v.minValue(multiplierBounds.min),
  v.maxValue(multiplierBounds.max),
  v.check((n) => Number(n.toFixed(multiplierBounds.decimals)) === n, `at most ${multiplierBounds.decimals} decimals`),
  // The check above, for the OpenAPI document, in words: `multipleOf: 0.0001` would make JSON Schema
  // validators that divide binary floats (Ajv, Spectral) refuse 0.7, the default itself.
  v.description(`At most ${multiplierBounds.decimals} decimals.`),
  v.metadata({ 'x-decimals': multiplierBounds.decimals }),
);

/** Why a run ended, when its status alone does not say: `deadline`, its `deadlineSeconds` passed. */
export const endReasons = ['deadline'] as const;
export type EndReason = (typeof endReasons)[number];

/** `yes`, `provider_terms` (provider terms grant the output), `no`; null when not checked. */
const modelCommercialUses = ['yes', 'provider_terms', 'no'] as const;

export const LicenceModelSchema = v.strictObject({
  node_id: v.string(),
  /** Provider that ran the model. */
  provider_key: v.string(),
  model: v.string(),
  licence: v.nullable(v.string()),
  licence_url: v.nullable(v.string()),
  commercial_use: v.nullable(v.picklist(modelCommercialUses)),
  /** The provider's own terms. */
  terms_url: v.nullable(v.string()),
  /** The licence as it stood when the step ran. */
  stamped_at: DateTimeSchema,
});
export type LicenceModel = v.InferOutput<typeof LicenceModelSchema>;

/**
 * Statuses a run summary (GET /runs) shows and filters on: the stored ones. `claimed` is read from
 * the run's step items, which a list does not read, so a claimed run is listed as `queued`.
 */
export const listedRunStatuses = ['queued', 'processing', 'completed', 'failed', 'cancelled', 'stopped'] as const;
export type ListedRunStatus = (typeof listedRunStatuses)[number];

/** Page sizes of GET /runs and GET /deferred-runs (`limit`). */
export const listPageLimits = { default: 20, max: 100 } as const;

/** A deferred run's statuses (schemas/deferred-runs.ts), which its list filters on. */
export const deferredRunStatuses = ['waiting', 'dispatched', 'expired', 'cancelled'] as const;
export const DeferredRunStatusSchema = v.picklist(deferredRunStatuses);

/** Value of the `X-Service-Event` header and the `event` field of the webhook body. */
const webhookEndEvents = ['run.completed', 'run.failed', 'run.stopped', 'run.cancelled'] as const;
export const WebhookEventSchema = v.picklist(webhookEndEvents);
export type WebhookEvent = v.InferOutput<typeof WebhookEventSchema>;
