import { listWorkflowVersions } from '../app/workflow-versions.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { keyedHandler } from '../http/keyed-handler.ts';
import { ok } from '../http/response.ts';

/** GET /workflows/{id}/versions (our design): the workflow's versions, newest first, a page at a time. */
export const makeHandler = (deps: Deps) =>
  keyedHandler(deps, 'ListWorkflowVersions', async (event, auth) =>
    ok(await listWorkflowVersions(deps, auth.key, event.pathParameters?.id ?? '', event.queryStringParameters)),
  );

export const handler = makeHandler(productionDeps({ ...dynamoDbClient() }));
