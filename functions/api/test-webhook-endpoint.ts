import { testEndpoint } from '../app/webhook-endpoints.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { sqsClient } from '../clients/sqs.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { keyedHandler } from '../http/keyed-handler.ts';
import { accepted } from '../http/response.ts';

/** POST /webhook-endpoints/{endpointId}/test (our design): queues a signed `ping`. */
export const makeHandler = (deps: Deps) =>
  keyedHandler(deps, 'TestWebhookEndpoint', async (event, auth) =>
    accepted(await testEndpoint(deps, auth, event.pathParameters?.endpointId ?? '')),
  );

export const handler = makeHandler(productionDeps({ ...dynamoDbClient(), ...sqsClient() }));
