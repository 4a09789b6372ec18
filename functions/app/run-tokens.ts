import { basePath } from '../../platform/routes.ts';
import { type RunToken, type RunTokenRequest, runTokenSeconds } from '../../schemas/run-tokens.ts';
import type { Deps } from '../deps.ts';
import { runTokenExpiry, signRunToken, withAccessToken } from '../domain/run-token.ts';
import { readRunItem } from '../store/run/index.ts';
import { signingSecret } from '../store/server-secrets.ts';
import { runStreamUrl, visibleRun } from './read-run.ts';

/** Who asks: the key's team, its id (the token names it) and the workflows it is limited to. */
interface Caller {
  teamId: string;
  keyId: string;
  key: { workflowIds: readonly string[] };
}

/** Where GET /runs/{jobId} is reached on this stage. */
const runUrl = (deps: Deps, jobId: string): string => {
  if (!deps.publicBaseUrl) throw new Error('no public base URL: a run token links need PUBLIC_BASE_URL');
  return `${deps.publicBaseUrl.replace(/\/+$/, '')}${basePath}/runs/${jobId}`;
};

/**
 * POST /runs/{jobId}/tokens: a run token for `jobId`, made by the caller's key, and the two
 * addresses it opens. The run must be one the key reads (another team's, or of a workflow the key
 * is not limited to, is the 404 of a missing run). Nothing is written but the signing key, once.
 */
export const issueRunToken = async (
  deps: Deps,
  auth: Caller,
  jobId: string,
  asked: RunTokenRequest,
): Promise<RunToken> => {
  visibleRun(await readRunItem(deps, jobId), auth.teamId, jobId, auth.key.workflowIds);
  const exp = runTokenExpiry(deps.now(), asked.expiresInSeconds ?? runTokenSeconds.default);
  const token = signRunToken(await signingSecret(deps, 'runToken'), {
    jobId,
    teamId: auth.teamId,
    keyId: auth.keyId,
    exp,
  });
  const events = runStreamUrl(deps, jobId) ?? `${runUrl(deps, jobId)}/events`;
  return {
    token,
    expiresAt: new Date(exp * 1000).toISOString(),
    links: { run: withAccessToken(runUrl(deps, jobId), token), events: withAccessToken(events, token) },
  };
};
