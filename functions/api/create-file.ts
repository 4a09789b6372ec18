import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { fileMessages } from '../../schemas/file-limits.ts';
import { type CreateFileRequest, CreateFileRequestSchema } from '../../schemas/files.ts';
import { createUpload } from '../app/uploads.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { s3Client } from '../clients/s3.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { FileNotAcceptedError } from '../errors/table.ts';
import { parseWith, readJsonBody } from '../http/body.ts';
import { keyedHandler } from '../http/keyed-handler.ts';
import { created } from '../http/response.ts';

/** Largest accepted body: a name of 255 characters and two short fields fit many times over. */
const maxCreateFileBodyBytes = 4 * 1024;

/** The body: 400 when it is not JSON or a field has the wrong type, 422 for a value outside the limits. */
const parseCreateFileRequest = (event: APIGatewayProxyEventV2): CreateFileRequest =>
  parseWith(
    CreateFileRequestSchema,
    readJsonBody(event, { maxBytes: maxCreateFileBodyBytes }),
    Object.fromEntries(Object.values(fileMessages).map((detail) => [detail, () => new FileNotAcceptedError(detail)])),
  );

/** POST /files (our design): declares a file and answers a presigned PUT for its bytes. */
export const makeHandler = (deps: Deps) =>
  keyedHandler(deps, 'CreateFile', async (event, auth) =>
    created(await createUpload(deps, { teamId: auth.teamId, keyId: auth.key.keyId }, parseCreateFileRequest(event))),
  );

export const handler = makeHandler(productionDeps({ ...dynamoDbClient(), ...s3Client() }));
