import { redeliverEndpointDelivery } from '../app/webhook-endpoints.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { sqsClient } from '../clients/sqs.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { keyedHandler } from '../http/keyed-handler.ts';
import { accepted } from '../http/response.ts';

/** POST /webhook-endpoints/{endpointId}/deliveries/{deliveryId}/redeliver (our design): one more attempt. */
export const makeHandler = (deps: Deps) =>
  keyedHandler(deps, 'RedeliverWebhookEndpointDelivery', async (event, auth) =>
    accepted(
      await redeliverEndpointDelivery(
        deps,
        auth,
        event.pathParameters?.endpointId ?? '',
        event.pathParameters?.deliveryId ?? '',
      ),
    ),
  );

export const handler = makeHandler(productionDeps({ ...dynamoDbClient(), ...sqsClient() }));
