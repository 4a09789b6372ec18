/**
 * The webhook's retry schedule: read by the delivery (`functions/domain/webhook.ts`) and by the
 * stack's alarm on the webhooks queue's oldest message (`lib/observability.ts`).
 */

/** Attempts a delivery makes before it is `failed`. */
export const webhookAttempts = 5;
/** First retry after 2 minutes, each wait twice the one before, never more than an hour. */
export const retryDelaySeconds = (failedAttempt: number): number => Math.min(3600, 120 * 2 ** (failedAttempt - 1));
