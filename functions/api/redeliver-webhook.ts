import { redeliverWebhook } from '../app/run-deliveries.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { sqsClient } from '../clients/sqs.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { keyedHandler } from '../http/keyed-handler.ts';
import { accepted } from '../http/response.ts';

/** POST /runs/{jobId}/deliveries/redeliver (our design): queue one new attempt of the run's webhook. */
export const makeHandler = (deps: Deps) =>
  keyedHandler(deps, 'RedeliverWebhook', async (event, auth) =>
    accepted(await redeliverWebhook(deps, auth, event.pathParameters?.jobId ?? '')),
  );

export const handler = makeHandler(productionDeps({ ...dynamoDbClient(), ...sqsClient() }));
