import { openFileLinkTarget } from '../app/file-links.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { s3Client } from '../clients/s3.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { anyOrigin } from '../http/origin-check.ts';
import { publicHandler } from '../http/public-handler.ts';
import { found } from '../http/response.ts';

/** GET /file-links/{object}?exp=…&sig=… (our design): a run's file link, redirected to its file. */
export const makeHandler = (deps: Deps) =>
  publicHandler(async (event) => {
    const query = event.queryStringParameters ?? {};
    return found(
      await openFileLinkTarget(deps, {
        object: event.pathParameters?.object ?? '',
        exp: query.exp ?? '',
        sig: query.sig ?? '',
      }),
    );
  }, deps.originCheck ?? anyOrigin);

export const handler = makeHandler(productionDeps({ ...dynamoDbClient(), ...s3Client() }));
