import { readCredits } from '../app/read-credits.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { keyedHandler } from '../http/keyed-handler.ts';
import { ok } from '../http/response.ts';

/** GET /credits (our design): the team's balance and held credits, the key's month against its cap, the projects' caps. */
export const makeHandler = (deps: Deps) =>
  keyedHandler(deps, 'GetCredits', async (_event, auth) => ok(await readCredits(deps, auth.key)));

export const handler = makeHandler(productionDeps({ ...dynamoDbClient() }));
