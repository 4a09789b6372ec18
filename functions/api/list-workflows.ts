import { listWorkflows } from '../app/list-workflows.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { keyedHandler } from '../http/keyed-handler.ts';
import { ok } from '../http/response.ts';

/** GET /workflows (spec 4.1): the team's workflows this key may run, newest change first. */
export const makeHandler = (deps: Deps) =>
  keyedHandler(deps, 'ListWorkflows', async (_event, auth) =>
    ok(await listWorkflows(deps, { teamId: auth.teamId, workflowIds: auth.key.workflowIds })),
  );

export const handler = makeHandler(productionDeps({ ...dynamoDbClient() }));
