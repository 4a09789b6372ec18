import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { basePath } from '../../platform/routes.ts';
import { waitMarginMs } from '../../platform/run-wait.ts';
import type { RunWait } from '../app/run-wait.ts';
import type { Deps } from '../deps.ts';
import { preferredWaitSeconds, waitApplied } from '../domain/prefer-wait.ts';

/**
 * The wait a request's `Prefer` header asks for (functions/domain/prefer-wait.ts), from now: N
 * seconds, and never past `waitMarginMs` before the function's own timeout (room for the last read
 * and the answer, whatever came before the wait). Undefined when it asks for none we serve.
 */
export const requestedWait = (
  deps: Pick<Deps, 'now'>,
  event: Pick<APIGatewayProxyEventV2, 'headers'>,
  context: Pick<Context, 'getRemainingTimeInMillis'>,
): RunWait | undefined => {
  const seconds = preferredWaitSeconds(event.headers.prefer);
  return seconds === undefined ? undefined : waitOf(deps, context, seconds);
};

/** A wait of `seconds` from now, never past `waitMarginMs` before the function's own timeout. */
export const waitOf = (
  deps: Pick<Deps, 'now'>,
  context: Pick<Context, 'getRemainingTimeInMillis'>,
  seconds: number,
): RunWait => {
  const room = Math.max(0, context.getRemainingTimeInMillis() - waitMarginMs);
  return { seconds, until: deps.now().getTime() + Math.min(seconds * 1000, room) };
};

/** `Preference-Applied` for a wait served (RFC 7240 section 3); nothing when none was. */
export const waitAppliedHeaders = (wait: RunWait | undefined): Record<string, string> =>
  wait ? { 'preference-applied': waitApplied(wait.seconds) } : {};

/** Where a resource of the API is read: absolute when the stage knows its address, else from the host's root. */
export const apiLocation = (deps: Pick<Deps, 'publicBaseUrl'>, path: string): string =>
  `${deps.publicBaseUrl ?? ''}${basePath}${path}`;
