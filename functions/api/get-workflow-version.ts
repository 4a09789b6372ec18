import { getWorkflowVersion } from '../app/workflow-versions.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { keyedHandler } from '../http/keyed-handler.ts';
import { ok } from '../http/response.ts';

/** GET /workflows/{id}/versions/{version} (our design): one version of the workflow, whole. */
export const makeHandler = (deps: Deps) =>
  keyedHandler(deps, 'GetWorkflowVersion', async (event, auth) =>
    ok(await getWorkflowVersion(deps, auth.key, event.pathParameters?.id ?? '', event.pathParameters?.version ?? '')),
  );

export const handler = makeHandler(productionDeps({ ...dynamoDbClient() }));
