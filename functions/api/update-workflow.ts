import { updateWorkflow } from '../app/workflow-writes.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { keyedHandler } from '../http/keyed-handler.ts';
import { ok } from '../http/response.ts';
import { parseCreateWorkflowRequest } from '../http/workflow-request.ts';

/** PUT /workflows/{id} (our design): a create's body makes the workflow's next version. */
export const makeHandler = (deps: Deps) =>
  keyedHandler(deps, 'UpdateWorkflow', async (event, auth) =>
    ok(await updateWorkflow(deps, auth.key, event.pathParameters?.id ?? '', () => parseCreateWorkflowRequest(event))),
  );

export const handler = makeHandler(productionDeps({ ...dynamoDbClient() }));
