import { getBulkAction } from '../app/bulk-cancel.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { keyedHandler } from '../http/keyed-handler.ts';
import { ok } from '../http/response.ts';

/** GET /bulk-actions/{bulkActionId} (our design): a bulk action's progress. */
export const makeHandler = (deps: Deps) =>
  keyedHandler(deps, 'GetBulkAction', async (event, auth) =>
    ok(await getBulkAction(deps, auth.teamId, event.pathParameters?.bulkActionId ?? '')),
  );

export const handler = makeHandler(productionDeps({ ...dynamoDbClient() }));
