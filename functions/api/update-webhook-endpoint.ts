import { UpdateEndpointRequestSchema } from '../../schemas/webhook-endpoints.ts';
import { changeEndpoint, maxEndpointBodyBytes } from '../app/webhook-endpoints.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { parseWith, readJsonBody } from '../http/body.ts';
import { keyedHandler } from '../http/keyed-handler.ts';
import { ok } from '../http/response.ts';

/** PATCH /webhook-endpoints/{endpointId} (our design): its URL, events, filters, description, `disabled`. */
export const makeHandler = (deps: Deps) =>
  keyedHandler(deps, 'UpdateWebhookEndpoint', async (event, auth) => {
    const request = parseWith(UpdateEndpointRequestSchema, readJsonBody(event, { maxBytes: maxEndpointBodyBytes }));
    return ok(await changeEndpoint(deps, auth, event.pathParameters?.endpointId ?? '', request));
  });

export const handler = makeHandler(productionDeps({ ...dynamoDbClient() }));
