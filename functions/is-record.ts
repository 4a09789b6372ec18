/** A JSON object: not null, not an array. Shared by the canvas checks, executors and providers. */
export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
