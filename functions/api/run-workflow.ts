import { startWorkflowRun } from '../app/start-run.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { s3Client } from '../clients/s3.ts';
import { sqsClient } from '../clients/sqs.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { runStartHandler } from '../http/run-start.ts';

/** POST /workflows/{id}/runs (spec 4.3). */
export const makeHandler = (deps: Deps) => runStartHandler(deps, 'RunWorkflow', startWorkflowRun);

export const handler = makeHandler(productionDeps({ ...dynamoDbClient(), ...sqsClient(), ...s3Client() }));
