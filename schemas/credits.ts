/**
 * GET /credits (our design): the team's money as a key sees it, amounts in credits (1 credit =
 * $0.01, two decimals at most): what it may spend, what runs hold, what this key spent this month
 * against its monthly cap, and each project's hard cap.
 */
import * as v from 'valibot';
import { DateTimeSchema } from './common.ts';
import { jsonResponse, type OperationSpec, storageBusyText } from './openapi-parts.ts';

const credits = (description: string) => v.pipe(v.number(), v.description(description));
const capOrNull = (description: string) => v.pipe(v.nullable(v.number()), v.description(description));

export const CreditsSchema = v.strictObject({
  balance: credits('Credits the team may spend now: run starts hold their estimate from it.'),
  held: credits('Credits held by runs in progress: each charged step is taken from it, the rest released at the end.'),
  perStepLimit: capOrNull('The most one step may be estimated to cost, or null for no limit.'),
  key: v.strictObject({
    monthlyCreditCap: capOrNull('This key’s monthly cap, or null for none.'),
    spentThisMonth: credits('What runs started with this key spent (held or charged) this calendar month, UTC.'),
    remainingThisMonth: capOrNull('The cap less the month’s spend (never below 0), or null without a cap.'),
    resetsAt: v.pipe(DateTimeSchema, v.description('When the month’s spend starts again from 0 (UTC).')),
  }),
  projects: v.pipe(
    v.array(
      v.strictObject({
        projectId: v.string(),
        hardCap: capOrNull('The project’s hard cap on what its runs may spend, or null for none.'),
        spent: credits('What the project’s runs spent (held or charged) so far.'),
      }),
    ),
    v.description('Every project of the team, by id.'),
  ),
});
export type CreditsView = v.InferOutput<typeof CreditsSchema>;

/** The named schemas of the document this module holds. */
export const creditComponents = { Credits: CreditsSchema };

/** The operations of the credit routes, for the document (schemas/openapi.ts). */
export const creditOperations: OperationSpec[] = [
  {
    operationId: 'GetCredits',
    tag: 'Credits',
    summary: 'Get the team’s credits',
    description:
      'The team’s balance and what runs hold, this key’s spend this month against its monthly cap, and each ' +
      'project’s hard cap and spend: the limits a run start is checked against (402). Read only: it never ' +
      'spends credits.',
    responses: {
      200: jsonResponse('The team’s credits and limits.', 'Credits'),
      500: jsonResponse('Server failure.', 'ServerError'),
    },
    errorWords: { 503: storageBusyText },
  },
];
