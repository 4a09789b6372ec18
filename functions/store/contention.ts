/**
 * What DynamoDB answers when it refused a request for load rather than for its content: the one
 * classification the write helper (write.ts) and the reads (read.ts) share.
 */
import type { StorageContention } from '../errors/table.ts';
import { cancellationReasons } from './refusals.ts';

/** Names DynamoDB gives throttling: an error's name, or a cancellation reason's code. */
const throttlingNames = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
  'ProvisionedThroughputExceeded',
  'ThrottlingError',
]);

/**
 * The contention an error reports, if it is one: the write was refused before any of it applied,
 * so trying it again is safe. Undefined for a failed condition and for any other failure.
 */
export const contentionOf = (error: unknown): Exclude<StorageContention, 'raceLost' | 'unavailable'> | undefined => {
  if (!(error instanceof Error)) return undefined;
  if (error.name === 'TransactionConflictException') return 'transactionConflict';
  if (throttlingNames.has(error.name)) return 'throttled';
  const codes = (cancellationReasons(error) ?? []).map((reason) => reason.Code ?? 'None');
  if (codes.includes('TransactionConflict')) return 'transactionConflict';
  if (codes.some((code) => throttlingNames.has(code))) return 'throttled';
  return undefined;
};
