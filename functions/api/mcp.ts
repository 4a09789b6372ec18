import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { s3Client } from '../clients/s3.ts';
import { sqsClient } from '../clients/sqs.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { keyedHandler } from '../http/keyed-handler.ts';
import { answerMcp } from '../http/mcp.ts';
import { metrics } from '../observability/metrics.ts';

/** POST /mcp: the MCP server (Streamable HTTP, stateless, JSON answers) over the key's workflows. */
export const makeHandler = (deps: Deps) =>
  keyedHandler(deps, 'Mcp', (event, auth, context) => answerMcp(deps, auth.key, event, context), logMetrics(metrics));

export const handler = makeHandler(productionDeps({ ...dynamoDbClient(), ...sqsClient(), ...s3Client() }));
