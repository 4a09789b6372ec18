import { rotateSecret } from '../app/webhook-endpoints.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { keyedHandler } from '../http/keyed-handler.ts';
import { ok } from '../http/response.ts';

/** POST /webhook-endpoints/{endpointId}/rotate-secret (our design): a new secret; the old one signs beside it for 24 h. */
export const makeHandler = (deps: Deps) =>
  keyedHandler(deps, 'RotateWebhookEndpointSecret', async (event, auth) =>
    ok(await rotateSecret(deps, auth, event.pathParameters?.endpointId ?? '')),
  );

export const handler = makeHandler(productionDeps({ ...dynamoDbClient() }));
