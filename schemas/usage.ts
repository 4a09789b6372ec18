/**
 * GET /usage (our design): the team's charges over a period of UTC days, summed by one grouping,
 * amounts in credits. Every grouping's rows sum exactly to what the team was charged in the period.
 */
import * as v from 'valibot';
import { jsonResponse, type OperationSpec, storageBusyText } from './openapi-parts.ts';

const credits = (description: string) => v.pipe(v.number(), v.description(description));
const count = (description: string) => v.pipe(v.number(), v.integer(), v.description(description));
const day = (description: string) => v.pipe(v.string(), v.isoDate(), v.description(description));

export const usageGroupings = ['day', 'workflow', 'key', 'tag', 'model', 'project'] as const;

export const UsageRowSchema = v.strictObject({
  group: v.pipe(
    v.nullable(v.string()),
    v.description(
      'The day (yyyy-mm-dd), workflowId, keyId, tag, model (`provider/model`) or projectId; null for the runs ' +
        'without one (no tag; the charge of steps that are no model’s, and what was released, under `model`).',
    ),
  ),
  runs: count('Runs settled in the period in this group (under `model`, a run counts in each row it charged in).'),
  steps: count('Their completed steps (under `model`, the steps of that model).'),
  chargedCredits: credits('What they were charged.'),
  refundedCredits: credits('What their starts held beyond their charge, given back to the balance when they ended.'),
});
export type UsageRowView = v.InferOutput<typeof UsageRowSchema>;

export const UsageSchema = v.strictObject({
  from: day('The first day of the period (UTC), included.'),
  to: day('The last day of the period (UTC), included.'),
  groupBy: v.picklist(usageGroupings),
  rows: v.pipe(v.array(UsageRowSchema), v.description('One row per group with a run settled in the period, by group.')),
  chargedCredits: credits('What the team was charged in the period: the sum of the rows’ `chargedCredits`, exactly.'),
  refundedCredits: credits('The sum of the rows’ `refundedCredits`.'),
});
export type UsageView = v.InferOutput<typeof UsageSchema>;

/** The named schemas of the document this module holds. */
export const usageComponents = { Usage: UsageSchema, UsageRow: UsageRowSchema };

const queryDay = (name: 'from' | 'to', description: string) => ({
  name,
  in: 'query' as const,
  required: true,
  description,
  schema: { type: 'string' as const, format: 'date' },
});

/** The operations of the usage route, for the document (schemas/openapi.ts). */
export const usageOperations: OperationSpec[] = [
  {
    operationId: 'GetUsage',
    tag: 'Credits',
    summary: 'Get the team’s usage',
    description:
      'What the team’s runs were charged from `from` to `to` (UTC days, both included, at most 366), summed by ' +
      '`groupBy`. A run counts on the day it was settled (its end, or when its last model step in flight ended), ' +
      'once, in one row of each grouping: the rows of any grouping sum exactly to the team’s charges in the ' +
      'period. Under `tag`, a run counts under its first tag (put the tag you bill by first). Under `model`, each ' +
      'charged model step counts under its provider and model, the rest of a run’s charge under null. ' +
      '`format=csv` answers the same rows as CSV (credits with two decimals). A key limited to certain workflows ' +
      'may not read it: usage covers the whole team. Read only: it never spends credits.',
    parameters: [
      queryDay('from', 'The first day, yyyy-mm-dd (UTC).'),
      queryDay('to', 'The last day, yyyy-mm-dd (UTC); at most 365 days after `from`.'),
      {
        name: 'groupBy',
        in: 'query',
        required: false,
        description: 'What the rows are: one per day (the default), workflow, key, tag, model or project.',
        schema: { type: 'string', enum: [...usageGroupings], default: 'day' },
      },
      {
        name: 'format',
        in: 'query',
        required: false,
        description: '`json` (the default) or `csv` (`text/csv`, a header line then one line per row).',
        schema: { type: 'string', enum: ['json', 'csv'], default: 'json' },
      },
    ],
    responses: {
      200: {
        ...jsonResponse('The team’s usage by the grouping.', 'Usage'),
        content: {
          ...jsonResponse('', 'Usage').content,
          'text/csv': {
            schema: { type: 'string' },
            example: 'group,runs,steps,chargedCredits,refundedCredits\r\n2026-12-01,12,40,3.50,0.25\r\n',
          },
        },
      },
    },
    errorWords: {
      400: 'A query parameter is missing or has a value it does not take (`detail` says which), the period is over 366 days, or it holds more rollup rows than one read takes.',
      403: 'The key lacks `usage:read`, or is limited to certain workflows.',
      503: storageBusyText,
    },
  },
];
