import { createHmac, timingSafeEqual } from 'node:crypto';
import { InvalidCursorError } from '../errors/table.ts';

/**
 * The `nextCursor` of GET /runs and GET /deferred-runs, and a run's `output_next`: opaque to the
 * caller, tamper-evident, and bound to the list, the team and the filters (or the run) it was
 * issued for. Pure: the signing key is passed in
 * (functions/store/run-list.ts keeps it).
 *
 * A cursor is `<payload>.<tag>`, both base64url: the payload is the JSON of the page's last
 * evaluated key, the tag the HMAC-SHA256 of (version, list, team, filters, payload) under the
 * server's key. So a cursor of another team or another filter set, an altered one, or anything
 * else fails the tag, and only a position this server issued for this very list is ever read back.
 * The filters are bound as normalized (`normalizedFilters`), so `?workflowId=ABC…` and `abc…` agree.
 */

/** The list, team and filters a cursor belongs to. */
export interface ListCursorScope {
  /** `workflow-versions`: one workflow's versions (its id as `workflowId`). */
  list: 'runs' | 'deferred-runs' | 'workflow-versions';
  teamId: string;
  workflowId: string | null;
  status: string | null;
  /** GET /runs?tag= (not the cursor's HMAC tag): a cursor of one tag's list opens no other list. */
  runTag?: string | null;
  /** GET /runs?batchId=: a cursor of one batch's list opens no other list. */
  batchId?: string | null;
}

/** The pages of one run's `output` (GET /runs/{jobId}?output_cursor=…): its team and its id. */
export interface RunOutputCursorScope {
  list: 'run-output';
  teamId: string;
  jobId: string;
}

export type CursorScope = ListCursorScope | RunOutputCursorScope;

/** A position in a DynamoDB Query (its LastEvaluatedKey): string attributes only. */
export type CursorPosition = Record<string, string>;

/** Longer than any cursor this module issues (four keys of a few dozen characters each). */
const maxCursorLength = 1024;

/**
 * What is signed. A list's cursors keep the exact bytes they were first signed over: without a run
 * tag, as before tags (cursors issued then still open); with one, `v2` and it.
 */
const signedText = (scope: CursorScope, payload: string): string => {
  if (scope.list === 'run-output') return JSON.stringify(['v1', scope.list, scope.teamId, scope.jobId, payload]);
  const filters = [scope.list, scope.teamId, scope.workflowId, scope.status];
  if (scope.batchId !== undefined && scope.batchId !== null) {
    return JSON.stringify(['v3', ...filters, scope.runTag ?? null, scope.batchId, payload]);
  }
  return JSON.stringify(
    scope.runTag === undefined || scope.runTag === null
      ? ['v1', ...filters, payload]
      : ['v2', ...filters, scope.runTag, payload],
  );
};

const tagOf = (secret: Uint8Array, scope: CursorScope, payload: string): Buffer =>
  createHmac('sha256', secret).update(signedText(scope, payload)).digest();

/** The cursor for `position` in the list `scope` names. */
export const signCursor = (secret: Uint8Array, scope: CursorScope, position: CursorPosition): string => {
  const payload = Buffer.from(JSON.stringify(position), 'utf8').toString('base64url');
  return `${payload}.${tagOf(secret, scope, payload).toString('base64url')}`;
};

const isPosition = (value: unknown): value is CursorPosition =>
  typeof value === 'object' &&
  value !== null &&
  !Array.isArray(value) &&
  Object.values(value).every((attribute) => typeof attribute === 'string');

/**
 * The position a cursor holds, if this server issued it for `scope`; InvalidCursorError for
 * anything else (checked in constant time before the payload is read).
 */
export const openCursor = (secret: Uint8Array, scope: CursorScope, cursor: string): CursorPosition => {
  const parts = cursor.length <= maxCursorLength ? cursor.split('.') : [];
  const [payload, tag] = parts;
  if (parts.length !== 2 || !payload || !tag) throw new InvalidCursorError();
  // Compared as text: base64url decoding ignores stray characters and padding bits, and a cursor
  // altered in any character must not pass.
  const expected = Buffer.from(tagOf(secret, scope, payload).toString('base64url'), 'utf8');
  const given = Buffer.from(tag, 'utf8');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw new InvalidCursorError();
  let position: unknown;
  try {
    position = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    throw new InvalidCursorError();
  }
  if (!isPosition(position)) throw new InvalidCursorError();
  return position;
};
