import type { AttributeValue, DynamoDBRecord } from 'aws-lambda';

/**
 * The table stream's records as plain objects, for its consumers (the operator events'
 * functions/store/operator-event-bus.ts, the lifecycle webhooks' functions/store/lifecycle-webhook-deliveries.ts).
 */

/** A stream image attribute as the table's code wrote it (the DocumentClient's plain values). */
const plainValue = (value: AttributeValue): unknown => {
  if (value.S !== undefined) return value.S;
  if (value.N !== undefined) return Number(value.N);
  if (value.BOOL !== undefined) return value.BOOL;
  if (value.NULL !== undefined) return null;
  if (value.M !== undefined) return plainImage(value.M);
  if (value.L !== undefined) return value.L.map(plainValue);
  if (value.SS !== undefined) return new Set(value.SS);
  if (value.NS !== undefined) return new Set(value.NS.map(Number));
  if (value.B !== undefined) return value.B;
  return value.BS;
};

const plainImage = (image: Record<string, AttributeValue>): Record<string, unknown> =>
  Object.fromEntries(Object.entries(image).map(([name, value]) => [name, plainValue(value)]));

/** One stream record's change: its sequence number (its batch item id) and its images as plain objects. */
export interface ItemChange {
  sequenceNumber: string;
  oldImage?: Record<string, unknown>;
  newImage?: Record<string, unknown>;
}

/** One stream record as its change. */
export const itemChangeOf = (record: DynamoDBRecord): ItemChange => {
  const { SequenceNumber = '', OldImage, NewImage } = record.dynamodb ?? {};
  return {
    sequenceNumber: SequenceNumber,
    ...(OldImage ? { oldImage: plainImage(OldImage) } : {}),
    ...(NewImage ? { newImage: plainImage(NewImage) } : {}),
  };
};
