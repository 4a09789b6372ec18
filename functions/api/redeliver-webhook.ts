import { RedeliverRequestSchema } from '../../schemas/deliveries.ts';
import { redeliverWebhook } from '../app/run-deliveries.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { sqsClient } from '../clients/sqs.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { parseWith, readJsonBody } from '../http/body.ts';
import { keyedHandler } from '../http/keyed-handler.ts';
import { accepted } from '../http/response.ts';

/** A redelivery's body is a few names: anything larger is no redelivery's. */
const maxRedeliverBodyBytes = 4096;

/**
 * POST /runs/{jobId}/deliveries/redeliver (our design): queue one new attempt of the run's webhook;
 * with a body, of the lifecycle event's delivery it names.
 */
export const makeHandler = (deps: Deps) =>
  keyedHandler(deps, 'RedeliverWebhook', async (event, auth) => {
    const asked = parseWith(
      RedeliverRequestSchema,
      readJsonBody(event, { maxBytes: maxRedeliverBodyBytes, emptyAs: {} }),
    );
    return accepted(await redeliverWebhook(deps, auth, event.pathParameters?.jobId ?? '', asked));
  });

export const handler = makeHandler(productionDeps({ ...dynamoDbClient(), ...sqsClient() }));
