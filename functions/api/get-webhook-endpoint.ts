import { getEndpoint } from '../app/webhook-endpoints.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { keyedHandler } from '../http/keyed-handler.ts';
import { ok } from '../http/response.ts';

/** GET /webhook-endpoints/{endpointId} (our design). */
export const makeHandler = (deps: Deps) =>
  keyedHandler(deps, 'GetWebhookEndpoint', async (event, auth) =>
    ok(await getEndpoint(deps, auth, event.pathParameters?.endpointId ?? '')),
  );

export const handler = makeHandler(productionDeps({ ...dynamoDbClient() }));
