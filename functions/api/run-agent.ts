import { startRunFor } from '../app/start-run.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { keyedHandler } from '../http/keyed-handler.ts';
import { loadAgentWorkflow } from '../store/runs.ts';

/** POST /agents/{id}/runs (spec 4.4): the agent's active workflow, else its newest. */
export const makeHandler = (deps: Deps) =>
  keyedHandler(deps, 'RunAgent', async (event, auth) =>
    startRunFor(deps, auth, event, () => loadAgentWorkflow(deps, auth.teamId, event.pathParameters?.id ?? '')),
  );

export const handler = makeHandler(productionDeps());
