/**
 * `@workflow-run-api/client`: a typed client for the Workflow Run API, generated from its OpenAPI
 * document, with `waitForRun`, `uploadFile`, typed errors and webhook verification.
 */
export * from './client.ts';
export * from './errors.ts';
export type { components, operations, paths } from './openapi-types.ts';
export * from './webhooks.ts';
