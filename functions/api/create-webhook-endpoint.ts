import { CreateEndpointRequestSchema } from '../../schemas/webhook-endpoints.ts';
import { createEndpoint, maxEndpointBodyBytes } from '../app/webhook-endpoints.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { parseWith, readJsonBody } from '../http/body.ts';
import { keyedHandler } from '../http/keyed-handler.ts';
import { created } from '../http/response.ts';

/** POST /webhook-endpoints (our design): a new endpoint of the team, its secret answered once. */
export const makeHandler = (deps: Deps) =>
  keyedHandler(deps, 'CreateWebhookEndpoint', async (event, auth) => {
    const request = parseWith(CreateEndpointRequestSchema, readJsonBody(event, { maxBytes: maxEndpointBodyBytes }));
    return created(await createEndpoint(deps, auth, request));
  });

export const handler = makeHandler(productionDeps({ ...dynamoDbClient() }));
