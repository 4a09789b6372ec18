import { startRunFor } from '../app/start-run.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { keyedHandler } from '../http/keyed-handler.ts';
import { loadRunnableWorkflow } from '../store/runs.ts';

/** POST /workflows/{id}/runs (spec 4.3). */
export const makeHandler = (deps: Deps) =>
  keyedHandler(deps, 'RunWorkflow', async (event, auth) =>
    startRunFor(deps, auth, event, () => loadRunnableWorkflow(deps, auth.teamId, event.pathParameters?.id ?? '')),
  );

export const handler = makeHandler(productionDeps());
