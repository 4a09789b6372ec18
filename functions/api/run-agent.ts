import { startAgentRun } from '../app/start-run.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { s3Client } from '../clients/s3.ts';
import { sqsClient } from '../clients/sqs.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { runStartHandler } from '../http/run-start.ts';

/** POST /agents/{id}/runs (spec 4.4): the agent's active workflow, else its newest. */
export const makeHandler = (deps: Deps) => runStartHandler(deps, 'RunAgent', startAgentRun);

export const handler = makeHandler(productionDeps({ ...dynamoDbClient(), ...sqsClient(), ...s3Client() }));
