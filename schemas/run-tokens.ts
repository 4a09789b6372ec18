/**
 * POST /runs/{jobId}/tokens (our design): a run token, for a browser to read one run and follow it
 * live without an API key (functions/domain/run-token.ts makes it). Its request, its answer and its
 * operation.
 */
import * as v from 'valibot';
import { DateTimeSchema, notArray } from './common.ts';
import { jsonResponse, type OperationSpec, ref, uuidPath } from './openapi-parts.ts';

/** A token's lifetime bounds, in seconds, and what it lives when the request names none. */
export const runTokenSeconds = { min: 60, max: 86_400, default: 3_600 } as const;

/** Body of POST /runs/{jobId}/tokens, optional: how long the token lives. */
export const RunTokenRequestSchema = notArray(
  v.object({
    expiresInSeconds: v.optional(
      v.pipe(
        v.number(),
        v.integer(),
        v.minValue(runTokenSeconds.min),
        v.maxValue(runTokenSeconds.max),
        v.description(
          `How long the token works, in seconds: ${runTokenSeconds.min} to ${runTokenSeconds.max}; ` +
            `${runTokenSeconds.default} when absent.`,
        ),
      ),
    ),
  }),
);
export type RunTokenRequest = v.InferOutput<typeof RunTokenRequestSchema>;

/** 201 of POST /runs/{jobId}/tokens. */
export const RunTokenSchema = v.strictObject({
  token: v.pipe(
    v.string(),
    v.regex(/^wrt_1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/),
    v.description('The token: pass it as the `access_token` query parameter. It is a secret while it works.'),
  ),
  expiresAt: v.pipe(DateTimeSchema, v.description('When the token stops working.')),
  links: v.pipe(
    v.strictObject({
      run: v.pipe(v.string(), v.description('GET /runs/{jobId} with the token: read the run with `fetch`.')),
      events: v.pipe(
        v.string(),
        v.description('GET /runs/{jobId}/events with the token: `new EventSource(links.events)`.'),
      ),
    }),
    v.description('The two addresses the token opens, each with the token as `access_token`.'),
  ),
});
export type RunToken = v.InferOutput<typeof RunTokenSchema>;

/** The named schemas of the document this module holds. */
export const runTokenComponents = {
  RunTokenRequest: RunTokenRequestSchema,
  RunToken: RunTokenSchema,
};

/** The operations of the run token routes, for the document (schemas/openapi.ts). */
export const runTokenOperations: OperationSpec[] = [
  {
    operationId: 'CreateRunToken',
    tag: 'Runs',
    summary: 'Make a run token for a browser',
    description: [
      'A token that reads this one run, for a browser: an `EventSource` cannot send `Authorization`, and an API ' +
        'key must never reach a browser. Hand the token (or its `links`) to the page: `new EventSource(links.events)` ' +
        'follows the run to `done`, `fetch(links.run)` reads it, from any origin (the answers carry ' +
        '`Access-Control-Allow-Origin: *`), with no relay of your own.',
      'The token works only on GET /runs/{jobId} and GET /runs/{jobId}/events of this run (another run reads as ' +
        'one that does not exist), only until `expiresAt`, and only while the key that made it stands: revoking ' +
        "the key ends every token it made. Its requests count against that key's rate limit and open streams. " +
        'An event stream it opened ends by `expiresAt` at the latest. Nothing is stored: make as many as you need.',
    ].join('\n\n'),
    parameters: [uuidPath('jobId', 'The `jobId` returned when the run started.')],
    requestBody: {
      required: false,
      description: `Optional: how long the token works (default ${runTokenSeconds.default} seconds).`,
      content: { 'application/json': { schema: ref('RunTokenRequest') } },
    },
    responses: { 201: jsonResponse('The token and the addresses it opens.', 'RunToken') },
    errorWords: {
      400: `The body is not JSON, or \`expiresInSeconds\` is not a whole number from ${runTokenSeconds.min} to ${runTokenSeconds.max}.`,
      413: 'The body is over 4 KB.',
      404: 'No such run in the team (or in the workflows the key is limited to).',
    },
  },
];
