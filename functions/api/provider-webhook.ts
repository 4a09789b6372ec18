import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { type JobProviderLookup, receiveProviderWebhook } from '../app/provider-webhook.ts';
import { providerWebhookWiring } from '../app/provider-webhook-wiring.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { sqsClient } from '../clients/sqs.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { anyOrigin } from '../http/origin-check.ts';
import { publicHandler } from '../http/public-handler.ts';
import { accepted } from '../http/response.ts';

/** The raw body as the provider signed it (API Gateway may hand it base64-encoded). */
const rawBody = (event: APIGatewayProxyEventV2): string =>
  event.isBase64Encoded ? Buffer.from(event.body ?? '', 'base64').toString('utf8') : (event.body ?? '');

/** POST /provider-webhooks/{provider}/{jobId}/{nodeId}/{token} (our design): functions/app/provider-webhook.ts. */
export const makeHandler = (
  deps: Deps,
  // Locally the step executor's own resolver (its executors carry it); none: every webhook is unknown.
  providers: JobProviderLookup = deps.executors.jobs?.provider ?? (async () => undefined),
) =>
  publicHandler(async (event) => {
    const path = event.pathParameters ?? {};
    const headers: Record<string, string | undefined> = {};
    for (const [name, value] of Object.entries(event.headers ?? {})) headers[name.toLowerCase()] = value;
    await receiveProviderWebhook(deps, providers, {
      provider: path.provider ?? '',
      jobId: path.jobId ?? '',
      nodeId: path.nodeId ?? '',
      token: path.token ?? '',
      delivery: { headers, body: rawBody(event), now: deps.now() },
    });
    return accepted({ accepted: true });
  }, deps.originCheck ?? anyOrigin);

export const handler = makeHandler(productionDeps({ ...dynamoDbClient(), ...sqsClient() }, providerWebhookWiring));
