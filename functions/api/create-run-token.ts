import { RunTokenRequestSchema } from '../../schemas/run-tokens.ts';
import { issueRunToken } from '../app/run-tokens.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { parseWith, readJsonBody } from '../http/body.ts';
import { keyedHandler } from '../http/keyed-handler.ts';
import { created } from '../http/response.ts';

/** A token's body is one number: anything larger is no token request's. */
const maxRunTokenBodyBytes = 4096;

/**
 * POST /runs/{jobId}/tokens (our design): a run token, for a browser to read this run and follow it
 * live (`?access_token=` on GET /runs/{jobId} and its event stream) without the key.
 */
export const makeHandler = (deps: Deps) =>
  keyedHandler(deps, 'CreateRunToken', async (event, auth) => {
    const asked = parseWith(
      RunTokenRequestSchema,
      readJsonBody(event, { maxBytes: maxRunTokenBodyBytes, emptyAs: {} }),
    );
    return created(await issueRunToken(deps, auth, event.pathParameters?.jobId ?? '', asked));
  });

export const handler = makeHandler(productionDeps({ ...dynamoDbClient() }));
