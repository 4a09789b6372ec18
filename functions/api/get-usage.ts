import { readUsage } from '../app/usage.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { keyedHandler } from '../http/keyed-handler.ts';
import { ok, okRaw } from '../http/response.ts';

/** GET /usage (our design): the team's charges over a period by one grouping, as JSON or CSV. */
export const makeHandler = (deps: Deps) =>
  keyedHandler(deps, 'GetUsage', async (event, auth) => {
    const answer = await readUsage(deps, auth.key, event.queryStringParameters);
    if (answer.format === 'json') return ok(answer.view);
    return okRaw(
      {
        'content-type': 'text/csv; charset=utf-8',
        'content-disposition': `attachment; filename="${answer.filename}"`,
      },
      answer.csv,
    );
  });

export const handler = makeHandler(productionDeps({ ...dynamoDbClient() }));
