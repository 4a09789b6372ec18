import { setStatus } from '../app/workflow-writes.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { keyedHandler } from '../http/keyed-handler.ts';
import { ok } from '../http/response.ts';
import { parseSetWorkflowStatusRequest } from '../http/workflow-request.ts';

/** PATCH /workflows/{id} (our design): sets the workflow's status. */
export const makeHandler = (deps: Deps) =>
  keyedHandler(deps, 'SetWorkflowStatus', async (event, auth) =>
    ok(await setStatus(deps, auth.key, event.pathParameters?.id ?? '', () => parseSetWorkflowStatusRequest(event))),
  );

export const handler = makeHandler(productionDeps({ ...dynamoDbClient() }));
