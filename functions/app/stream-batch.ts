import { BatchProcessor, EventType } from '@aws-lambda-powertools/batch';
import type { DynamoDBRecord } from 'aws-lambda';

/** What a record after a failed one is reported failed with: it was never tried. */
export class EarlierRecordFailedError extends Error {
  override name = 'EarlierRecordFailedError';
}

/**
 * Powertools' batch processor for the table's stream, one record at a time in stream order, that
 * stops at the first failure: that record and every later one are reported failed, the later ones
 * untried. Lambda restarts a stream batch from the lowest sequence number reported, so a later
 * record handled now would be handled again then, after the one that failed (as Powertools'
 * ordered FIFO processor short-circuits a message group).
 */
class InOrderStreamProcessor extends BatchProcessor {
  constructor() {
    super(EventType.DynamoDBStreams);
  }

  override async processRecord(record: DynamoDBRecord) {
    if (this.failureMessages.length > 0) return this.failureHandler(record, new EarlierRecordFailedError());
    return super.processRecord(record);
  }
}

/** What a batch of the table's changes gave, in order. */
export interface StreamBatchOutcome<T> {
  /** What `handle` returned for each record handled, in stream order. */
  results: T[];
  /** Sequence numbers to report as batch item failures: the first that failed and every one after it. */
  failed: string[];
  /** The error the first failed record threw, if one did. */
  error?: Error;
}

/**
 * Handles `records` in stream order through Powertools' batch utility, stopping at the first that
 * throws. Never throws itself, even when every record failed: the caller answers the failures as
 * batch item failures, which the stream's event source must report (`reportBatchItemFailures`).
 */
export const handleStreamInOrder = async <T>(
  records: readonly DynamoDBRecord[],
  handle: (record: DynamoDBRecord) => Promise<T>,
): Promise<StreamBatchOutcome<T>> => {
  const processor = new InOrderStreamProcessor();
  processor.register([...records], handle, { processInParallel: false, throwOnFullBatchFailure: false });
  const processed = await processor.process();
  return {
    results: processed.flatMap(([status, result]) => (status === 'success' ? [result as T] : [])),
    failed: processor.response().batchItemFailures.map((failure) => failure.itemIdentifier),
    error: processor.errors[0],
  };
};
