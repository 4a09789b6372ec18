import { readRunWithLinks } from '../app/read-run.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { keyedHandler } from '../http/keyed-handler.ts';
import { ok } from '../http/response.ts';

/**
 * GET /runs/{jobId} (spec 4.5), `?output_cursor=` for a later page of its outputs. Reading never
 * spends credits, so a key over its cap still reads. The Run carries `links.events`, where to follow it live.
 */
export const makeHandler = (deps: Deps) =>
  keyedHandler(deps, 'GetRun', async (event, auth) =>
    ok(
      await readRunWithLinks(
        deps,
        auth.teamId,
        event.pathParameters?.jobId ?? '',
        auth.key.workflowIds,
        event.queryStringParameters?.output_cursor,
      ),
    ),
  );

export const handler = makeHandler(productionDeps({ ...dynamoDbClient() }));
