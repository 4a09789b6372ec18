import { listTeamEndpoints } from '../app/webhook-endpoints.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { keyedHandler } from '../http/keyed-handler.ts';
import { ok } from '../http/response.ts';

/** GET /webhook-endpoints (our design): the team's endpoints, never a secret. */
export const makeHandler = (deps: Deps) =>
  keyedHandler(deps, 'ListWebhookEndpoints', async (_event, auth) => ok(await listTeamEndpoints(deps, auth)));

export const handler = makeHandler(productionDeps({ ...dynamoDbClient() }));
