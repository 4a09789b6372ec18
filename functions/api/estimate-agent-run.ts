import { estimateAgentRun } from '../app/estimate-run.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { s3Client } from '../clients/s3.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { runEstimateHandler } from '../http/run-estimate.ts';

/** POST /agents/{id}/estimate (our design): what a run of the agent's workflow with this body would hold and answer. */
export const makeHandler = (deps: Deps) => runEstimateHandler(deps, 'EstimateAgentRun', estimateAgentRun);

export const handler = makeHandler(productionDeps({ ...dynamoDbClient(), ...s3Client() }));
