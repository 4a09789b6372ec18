/**
 * POST /workflows/{id}/estimate and POST /agents/{id}/estimate (our design): a run start's body in,
 * what that start would hold now and whether it would be refused out, amounts in credits. Nothing is
 * started, held or counted.
 */
import * as v from 'valibot';
import { scopeOf } from '../platform/routes.ts';
import { DateTimeSchema, UuidSchema } from './common.ts';
import { jsonResponse, type OperationSpec, ref, storageBusyText, uuidPath } from './openapi-parts.ts';
import { LicenceSchema } from './runs.ts';

/** A price multiplier as answered (the operator's, 0.0001 to 10). */
const AnsweredMultiplierSchema = v.number();

const credits = (description: string) => v.pipe(v.number(), v.description(description));

const PricedHourSchema = v.strictObject({
  startsAt: v.pipe(DateTimeSchema, v.description('The first instant of the UTC hour.')),
  multiplier: AnsweredMultiplierSchema,
  estimatedCredits: credits('What the run would hold deferred to start in this hour (its steps at this multiplier).'),
});

export const RunEstimateSchema = v.strictObject({
  workflowId: v.pipe(UuidSchema, v.description('The workflow that would run (for an agent, the one it would run).')),
  estimatedCredits: credits(
    'Exactly what the start with this body would hold now: the sum of `steps`. With `defer: true`, at the ' +
      'multiplier it would start at (`deferredStart`), or at `maxMultiplier` when no hour of its wait reaches it.',
  ),
  steps: v.pipe(
    v.array(
      v.strictObject({
        nodeId: v.string(),
        type: v.string(),
        estimatedCredits: credits('This step’s part of the estimate: the most it is charged.'),
      }),
    ),
    v.description('Each step’s part, in the workflow’s order; they sum exactly to `estimatedCredits`.'),
  ),
  refusal: v.pipe(
    v.nullable(
      v.strictObject({
        status: v.pipe(v.number(), v.integer(), v.description('The status the start would answer.')),
        body: v.pipe(
          v.record(v.string(), v.unknown()),
          v.description('The body the start would answer, exactly (see the run start’s errors).'),
        ),
      }),
    ),
    v.description(
      'null when the start would be accepted now; else its answer: the 402 family, 409 (a run in progress, the ' +
        'storage quota), 422 (validation, unknown input keys, a file input, a provider) or 503 (a monthly cap ' +
        'that could not be read). The first a start would meet, in its order.',
    ),
  ),
  licence: v.pipe(
    v.nullable(LicenceSchema),
    v.description(
      'The licence the outputs would carry at the strictest (every model step the run would run, with the ' +
        'facts as they stand now); null when it runs no model. Not legal advice.',
    ),
  ),
  multipliers: v.strictObject({
    inForce: v.pipe(PricedHourSchema, v.description('The multiplier in force now (`startsAt` is now).')),
    hours: v.pipe(
      v.array(PricedHourSchema),
      v.description(
        'Each of the next 24 UTC hours, as the multipliers are set now (an operator may change them): what ' +
          'the run would cost deferred to start then. A run started at once is priced at 1.',
      ),
    ),
  }),
  deferredStart: v.optional(
    v.pipe(
      v.nullable(v.strictObject({ startsAt: DateTimeSchema, multiplier: AnsweredMultiplierSchema })),
      v.description(
        'Only with `defer: true`: when the deferred run would start as the multipliers are set now (now, or ' +
          'the first hour whose multiplier is at most `maxMultiplier`); null when no hour of its 24-hour wait is, ' +
          'and it would expire unstarted.',
      ),
    ),
  ),
});
export type RunEstimateView = v.InferOutput<typeof RunEstimateSchema>;

/** The named schemas of the document this module holds. */
export const estimateComponents = { RunEstimate: RunEstimateSchema };

const estimate = (subject: 'workflow' | 'agent'): OperationSpec => ({
  operationId: subject === 'workflow' ? 'EstimateWorkflowRun' : 'EstimateAgentRun',
  tag: 'Runs',
  summary: subject === 'workflow' ? 'Estimate a workflow run' : 'Estimate an agent run',
  description: [
    `Takes the body of ${subject === 'workflow' ? 'Run a workflow' : 'Run an agent'} and answers what that ` +
      'start would hold now (`estimatedCredits`, each step’s part), whether it would be refused and how ' +
      '(`refusal`: the status and body the start would answer), the licence its outputs would carry, and the ' +
      'price multiplier now and for each of the next 24 UTC hours with what the run would cost deferred to each.',
    'Nothing is started, held, written or counted against a cap; the request counts once against the rate ' +
      'limit. The start checks again when it is made: an estimate is not a reservation. `Idempotency-Key` is ' +
      'not read.',
  ].join('\n\n'),
  parameters: [
    uuidPath('id', subject === 'workflow' ? 'The workflow to estimate.' : 'The agent whose workflow to estimate.'),
  ],
  requestBody: {
    required: false,
    description: 'A run start’s body; an empty or missing body estimates the workflow as built.',
    content: { 'application/json': { schema: ref('RunRequest') } },
  },
  responses: {
    200: jsonResponse('The estimate; `refusal` says whether the start would be refused.', 'RunEstimate'),
  },
  errorWords: {
    400: 'The body is not JSON, or a field has the wrong type or passes a limit (as on a run start).',
    413: 'The body is larger than 64 KiB.',
    403: `The key lacks \`${scopeOf(subject === 'workflow' ? 'EstimateWorkflowRun' : 'EstimateAgentRun')}\`, or is limited to other workflows.`,
    404:
      subject === 'workflow'
        ? 'No such workflow in the team, or it has no canvas.'
        : 'No such agent in the team, no workflow for it, or no canvas.',
    422: '`callbackUrl` is not https (as on a run start).',
    503: storageBusyText,
  },
});

/** The operations of the estimate routes, for the document (schemas/openapi.ts). */
export const estimateOperations: OperationSpec[] = [estimate('workflow'), estimate('agent')];
