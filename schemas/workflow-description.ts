/**
 * GET /workflows/{id} (our design): a workflow described for a caller or an agent that would run
 * it: its summary, its version, the JSON Schema of its run `inputs`, its final steps, the range of
 * a run's price and the licence its outputs would carry.
 */
import * as v from 'valibot';
import { scopeOf } from '../platform/routes.ts';
import { jsonResponse, type OperationSpec, uuidPath } from './openapi-parts.ts';
import { LicenceSchema } from './runs.ts';
import { WorkflowSummarySchema } from './workflows.ts';

const credits = (description: string) => v.pipe(v.number(), v.description(description));

const RunInputPropertySchema = v.strictObject({
  type: v.literal('string'),
  description: v.string(),
  default: v.optional(v.string()),
  anyOf: v.optional(v.array(v.strictObject({ title: v.string(), pattern: v.string() }))),
  'x-contentTypes': v.optional(v.array(v.string())),
});

export const WorkflowInputsJsonSchema = v.pipe(
  v.strictObject({
    $schema: v.literal('https://json-schema.org/draft/2020-12/schema'),
    type: v.literal('object'),
    properties: v.record(v.string(), RunInputPropertySchema),
    required: v.array(v.string()),
    additionalProperties: v.literal(false),
    description: v.optional(v.string()),
    not: v.optional(v.strictObject({})),
  }),
  v.description(
    'A JSON Schema (2020-12) of the `inputs` a run takes: one property per step `config.apiInputKey`; a text ' +
      'step takes a string (`default`: the step’s own text), a file step a `fileId` from POST /files or an https ' +
      'URL, of a type in `x-contentTypes`. `required`: a loader with nothing else to load. No other key is ' +
      'allowed. With `not: {}` (and a `description` saying why), no inputs can start a run: a loader has ' +
      'nothing to load and no key for a run to give it. A run start checks its `inputs` by exactly these rules (and then that the file exists and is ' +
      'of its type, or the URL’s host is public), answering its 422 as documented there.',
  ),
);

export const WorkflowDescriptionSchema = v.strictObject({
  ...WorkflowSummarySchema.entries,
  version: v.pipe(v.number(), v.integer(), v.minValue(1), v.description('The version described (the latest).')),
  inputs: WorkflowInputsJsonSchema,
  outputs: v.pipe(
    v.array(
      v.strictObject({
        key: v.string(),
        type: v.string(),
        handles: v.array(v.strictObject({ name: v.string(), kind: v.string() })),
      }),
    ),
    v.description(
      'The final steps (nothing reads from them; their results are the run’s `output`), each handle’s kind of value.',
    ),
  ),
  price: v.pipe(
    v.strictObject({
      minCredits: credits('The least a run holds: the cheapest mode at the lowest multiplier.'),
      maxCredits: credits('The most a run holds: the dearest mode at the highest multiplier.'),
      modes: v.pipe(
        v.array(v.strictObject({ mode: v.picklist(['production', 'draft', 'preview']), estimatedCredits: v.number() })),
        v.description('What a run started now holds in each mode (at multiplier 1).'),
      ),
      multipliers: v.pipe(
        v.strictObject({ min: v.number(), max: v.number() }),
        v.description(
          'The lowest and highest multiplier a run could be priced at as the settings stand now: 1 for a run ' +
            'started at once, the next 24 UTC hours’ for a deferred one.',
        ),
      ),
    }),
    v.description('The estimate’s range (POST /workflows/{id}/estimate prices one start exactly).'),
  ),
  licence: v.pipe(
    v.nullable(LicenceSchema),
    v.description(
      'The licence the outputs would carry at the strictest of its model steps, as the facts stand now; null ' +
        'when it runs no model. Not legal advice.',
    ),
  ),
});
export type WorkflowDescriptionView = v.InferOutput<typeof WorkflowDescriptionSchema>;

/** The named schemas of the document this module holds. */
export const workflowDescriptionComponents = {
  WorkflowInputs: WorkflowInputsJsonSchema,
  WorkflowDescription: WorkflowDescriptionSchema,
};

export const workflowDescriptionOperations: OperationSpec[] = [
  {
    operationId: 'GetWorkflow',
    tag: 'Workflows',
    summary: 'Describe a workflow',
    description:
      'A workflow of the team as a caller needs it to run it: its `inputs` as a JSON Schema (the rules a run ' +
      'start checks its `inputs` by), its final steps, the range of a run’s price and the licence its outputs ' +
      'would carry.',
    parameters: [uuidPath('id', 'The workflow id.')],
    responses: { 200: jsonResponse('The workflow, described.', 'WorkflowDescription') },
    errorWords: {
      403: `The key lacks \`${scopeOf('GetWorkflow')}\`.`,
      404: 'No such workflow in the team, or one outside the workflows the key is limited to.',
    },
  },
];
