import { readBatch } from '../app/read-batch.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { keyedHandler } from '../http/keyed-handler.ts';
import { ok } from '../http/response.ts';

/** GET /batches/{batchId} (our design): the runs a batch started, counted by status. */
export const makeHandler = (deps: Deps) =>
  keyedHandler(deps, 'GetBatch', async (event, auth) =>
    ok(await readBatch(deps, auth.key, event.pathParameters?.batchId ?? '')),
  );

export const handler = makeHandler(productionDeps({ ...dynamoDbClient() }));
