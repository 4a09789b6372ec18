import { dynamoDbClient } from '../clients/dynamodb.ts';
import { sqsClient } from '../clients/sqs.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { runStartHandler } from '../http/run-start.ts';
import { loadAgentWorkflow } from '../store/run/index.ts';

/** POST /agents/{id}/runs (spec 4.4): the agent's active workflow, else its newest. */
export const makeHandler = (deps: Deps) => runStartHandler(deps, 'RunAgent', loadAgentWorkflow);

export const handler = makeHandler(productionDeps({ ...dynamoDbClient(), ...sqsClient() }));
