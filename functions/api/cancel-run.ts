import { cancelRun } from '../app/cancel-run.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { sqsClient } from '../clients/sqs.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { keyedHandler } from '../http/keyed-handler.ts';
import { ok } from '../http/response.ts';

/** POST /runs/{jobId}/cancel (our design): cancel a queued run or stop one under way. */
export const makeHandler = (deps: Deps) =>
  keyedHandler(deps, 'CancelRun', async (event, auth) =>
    ok(await cancelRun(deps, auth.teamId, event.pathParameters?.jobId ?? '', auth.key.workflowIds)),
  );

export const handler = makeHandler(productionDeps({ ...dynamoDbClient(), ...sqsClient() }));
