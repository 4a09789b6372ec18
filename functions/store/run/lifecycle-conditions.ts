/**
 * DynamoDB conditions from the lifecycle's moves (functions/domain/run-lifecycle.ts): a move's
 * `from` statuses become its `#status` condition, so a status added to a move reaches its write.
 * Each status is a value named after itself (`:queued`), given by `statusValues`.
 */

import { StepStatus } from '../../../platform/run-statuses.ts';
import type { Transition } from '../../domain/run-lifecycle.ts';

/** `#status` is one of the move's stored `from` statuses (it needs `#status` and `statusValues`). */
export const fromCondition = (move: Pick<Transition<string>, 'from'>): string => {
  const statuses = move.from.filter((s) => s !== 'none');
  const status =
    statuses.length === 1 ? `#status = :${statuses[0]}` : `#status IN (${statuses.map((s) => `:${s}`).join(', ')})`;
  return move.from.includes('none') ? `(attribute_not_exists(PK) OR ${status})` : status;
};

/** The expression values that name statuses after themselves (`:queued` is `queued`). */
export const statusValues = (...statuses: readonly string[]): Record<string, string> =>
  Object.fromEntries(statuses.map((s) => [`:${s}`, s]));

/** The claim `attempt` still holds its step: it is `processing` and no later claim took it. */
export const claimCondition = (attempt: number) => ({
  ConditionExpression: '#status = :processing AND attempts = :attempt',
  ExpressionAttributeNames: { '#status': 'status' },
  ExpressionAttributeValues: { ...statusValues(StepStatus.processing), ':attempt': attempt },
});
