import { listDeliveriesOfEndpoint } from '../app/webhook-endpoints.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { keyedHandler } from '../http/keyed-handler.ts';
import { ok } from '../http/response.ts';

/** GET /webhook-endpoints/{endpointId}/deliveries (our design): the delivery log, newest first. */
export const makeHandler = (deps: Deps) =>
  keyedHandler(deps, 'ListWebhookEndpointDeliveries', async (event, auth) =>
    ok(
      await listDeliveriesOfEndpoint(
        deps,
        auth,
        event.pathParameters?.endpointId ?? '',
        event.queryStringParameters?.cursor,
      ),
    ),
  );

export const handler = makeHandler(productionDeps({ ...dynamoDbClient() }));
