/**
 * What DynamoDB answers when it refuses a write, read without casts: a failed condition of one
 * item (with its old item when the write asked for it), or a cancelled transaction's reasons, one
 * per item in order. Items in a refusal come as DynamoDB attribute values (`{ S: "…" }`): the
 * DocumentClient does not convert them, so they are read with the attribute schemas below.
 */
import * as v from 'valibot';

/** A string attribute as a refusal carries it, its value read with `value` (any string by default). */
export const stringAttribute = <TValue extends v.GenericSchema<string, string>>(value: TValue) =>
  v.object({ S: value });
export const StringAttributeSchema = stringAttribute(v.string());
/** A string set attribute as a refusal carries it. */
export const StringSetAttributeSchema = v.object({ SS: v.array(v.string()) });

const RefusedItemSchema = v.record(v.string(), v.unknown());

const CancellationReasonSchema = v.object({
  Code: v.optional(v.string()),
  Item: v.optional(RefusedItemSchema),
});
export type CancellationReason = v.InferOutput<typeof CancellationReasonSchema>;

const CancellationReasonsSchema = v.array(CancellationReasonSchema);

/** A single write's condition failed. */
export const isConditionalCheckFailed = (error: unknown): error is Error =>
  error instanceof Error && error.name === 'ConditionalCheckFailedException';

/** The old item of a failed conditional write (`ReturnValuesOnConditionCheckFailure: 'ALL_OLD'`), if any. */
export const refusedItem = (error: unknown): Record<string, unknown> | undefined => {
  if (!isConditionalCheckFailed(error) || !('Item' in error)) return undefined;
  const parsed = v.safeParse(RefusedItemSchema, error.Item);
  return parsed.success ? parsed.output : undefined;
};

/** A transaction was cancelled: a condition failed, it met another transaction, or DynamoDB throttled it. */
export const isTransactionCanceled = (error: unknown): error is Error =>
  error instanceof Error && error.name === 'TransactionCanceledException';

/** The reasons of a cancelled transaction, one per item in order; undefined for any other error. */
export const cancellationReasons = (error: unknown): CancellationReason[] | undefined => {
  if (!isTransactionCanceled(error) || !('CancellationReasons' in error)) return undefined;
  const parsed = v.safeParse(CancellationReasonsSchema, error.CancellationReasons);
  return parsed.success ? parsed.output : undefined;
};
