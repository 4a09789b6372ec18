import { startRunFor } from '../app/start-run.ts';
import { type Deps, productionDeps } from '../deps.ts';
import { keyedHandler } from '../http/keyed-handler.ts';
import { json } from '../http/response.ts';
import { runStartOf } from '../http/run-start.ts';
import { loadRunnableWorkflow } from '../store/runs.ts';

/** POST /workflows/{id}/runs (spec 4.3). */
export const makeHandler = (deps: Deps) =>
  keyedHandler(deps, 'RunWorkflow', async (event, auth) => {
    const start = runStartOf(event);
    const answer = await startRunFor(deps, auth.key, start, () =>
      loadRunnableWorkflow(deps, auth.teamId, event.pathParameters?.id ?? ''),
    );
    return json(answer.status, answer.body);
  });

export const handler = makeHandler(productionDeps());
