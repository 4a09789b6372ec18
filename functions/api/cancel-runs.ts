import { BulkCancelRequestSchema } from '../../schemas/bulk-actions.ts';
import { startBulkCancel } from '../app/bulk-cancel.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { sqsClient } from '../clients/sqs.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { maxBulkCancelBodyBytes } from '../domain/bulk-cancel.ts';
import { parseWith, readJsonBody } from '../http/body.ts';
import { keyedHandler } from '../http/keyed-handler.ts';
import { accepted } from '../http/response.ts';

/** POST /runs/cancel (our design): cancel many runs, by id or by filter, in the background. */
export const makeHandler = (deps: Deps) =>
  keyedHandler(deps, 'CancelRuns', async (event, auth) => {
    const request = parseWith(BulkCancelRequestSchema, readJsonBody(event, { maxBytes: maxBulkCancelBodyBytes }));
    const caller = { teamId: auth.teamId, keyId: auth.key.keyId, workflowIds: auth.key.workflowIds };
    return accepted(await startBulkCancel(deps, caller, request));
  });

export const handler = makeHandler(productionDeps({ ...dynamoDbClient(), ...sqsClient() }));
