import type { WorkflowDescriptionView } from '../../schemas/workflow-description.ts';
import { describeWorkflow, type WorkflowDescription } from '../app/describe-workflow.ts';
import { dynamoDbClient } from '../clients/dynamodb.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { toCredits } from '../domain/credits.ts';
import { keyedHandler } from '../http/keyed-handler.ts';
import { ok } from '../http/response.ts';

/** The answer's body: the summary's fields, then the description, amounts in credits. */
const bodyOf = (described: WorkflowDescription): WorkflowDescriptionView => {
  const { price } = described;
  return {
    ...described.summary,
    version: described.version,
    inputs: described.inputs,
    outputs: described.outputs,
    price: {
      minCredits: toCredits(price.minHundredths),
      maxCredits: toCredits(price.maxHundredths),
      modes: price.modes.map((m) => ({ mode: m.mode, estimatedCredits: toCredits(m.totalHundredths) })),
      multipliers: price.multipliers,
    },
    licence: described.licence ?? null,
  };
};

/** GET /workflows/{id} (our design): the workflow described: inputs, outputs, price range, licence. */
export const makeHandler = (deps: Deps) =>
  keyedHandler(deps, 'GetWorkflow', async (event, auth) =>
    ok(bodyOf(await describeWorkflow(deps, auth.key, event.pathParameters?.id ?? ''))),
  );

export const handler = makeHandler(productionDeps({ ...dynamoDbClient() }));
