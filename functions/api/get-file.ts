import { readUpload } from '../app/uploads.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { s3Client } from '../clients/s3.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { keyedHandler } from '../http/keyed-handler.ts';
import { ok } from '../http/response.ts';

/** GET /files/{fileId} (our design): the file, its upload checked if it arrived since the last look. */
export const makeHandler = (deps: Deps) =>
  keyedHandler(deps, 'GetFile', async (event, auth) =>
    ok(await readUpload(deps, auth.teamId, event.pathParameters?.fileId ?? '')),
  );

export const handler = makeHandler(productionDeps({ ...dynamoDbClient(), ...s3Client() }));
