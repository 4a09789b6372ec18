import { removeEndpoint } from '../app/webhook-endpoints.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { keyedHandler } from '../http/keyed-handler.ts';
import { ok } from '../http/response.ts';

/** DELETE /webhook-endpoints/{endpointId} (our design): no attempt is made after. */
export const makeHandler = (deps: Deps) =>
  keyedHandler(deps, 'DeleteWebhookEndpoint', async (event, auth) =>
    ok(await removeEndpoint(deps, auth, event.pathParameters?.endpointId ?? '')),
  );

export const handler = makeHandler(productionDeps({ ...dynamoDbClient() }));
