import { createWorkflow } from '../app/create-workflow.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { keyedHandler } from '../http/keyed-handler.ts';
import { created } from '../http/response.ts';
import { parseCreateWorkflowRequest } from '../http/workflow-request.ts';

/** POST /workflows (spec 4.2). */
export const makeHandler = (deps: Deps) =>
  keyedHandler(deps, 'CreateWorkflow', async (event, auth) =>
    created(await createWorkflow(deps, auth.key, () => parseCreateWorkflowRequest(event))),
  );

export const handler = makeHandler(productionDeps({ ...dynamoDbClient() }));
