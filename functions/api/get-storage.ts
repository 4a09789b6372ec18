import { readStorage } from '../app/uploads.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { keyedHandler } from '../http/keyed-handler.ts';
import { ok } from '../http/response.ts';

/** GET /storage (our design): the bytes the team holds and its storage quota. */
export const makeHandler = (deps: Deps) =>
  keyedHandler(deps, 'GetStorage', async (_event, auth) => ok(await readStorage(deps, auth.teamId)));

export const handler = makeHandler(productionDeps({ ...dynamoDbClient() }));
