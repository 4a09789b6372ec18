/**
 * Every family of the stored items, for tests and tools that read them all (a test listing every
 * `storedX`). Runtime code imports the family it reads (./runs.ts, ./tenancy.ts, …), so it builds no
 * other item's schema: test/architecture.test.ts holds that nothing under functions/ imports this.
 */

export * from './api-keys.ts';
export * from './bulk-actions.ts';
export * from './deferred-run-entries.ts';
export * from './deferred-runs.ts';
export * from './deliveries.ts';
export * from './idempotency.ts';
export * from './item.ts';
export * from './price.ts';
export * from './runs.ts';
export * from './server-secrets.ts';
export * from './tenancy.ts';
export * from './uploads.ts';
export * from './usage.ts';
export * from './webhook-endpoints.ts';
export * from './workflow-locks.ts';
export * from './workflows.ts';
