/**
 * Our design: `Prefer: wait=N` (RFC 7240) in the document: the request header of the routes that
 * wait for their run (both run starts, the resume, Get a run) and the headers they answer.
 */
import type { HeaderObject } from 'openapi3-ts/oas31';
import { maxWaitSeconds } from '../platform/run-wait.ts';
import type { DocumentedParameter } from './openapi-parts.ts';

/** The `Prefer` request header; `waits` says what is waited for. */
export const preferWaitParameter = (waits: string): DocumentedParameter => ({
  name: 'Prefer',
  in: 'header',
  required: false,
  description:
    `\`wait=N\` (RFC 7240), N whole seconds from 1 to ${maxWaitSeconds}: ${waits} A larger N is served as ` +
    `${maxWaitSeconds}; \`wait=0\`, a malformed value and any other preference are ignored (the request is ` +
    'answered as without the header). `Preference-Applied` says the wait served. The request counts once ' +
    'against the rate limit however long it waits.',
  schema: { type: 'string', examples: ['wait=10'] },
});

/** `Preference-Applied`: the wait served, when one was. */
export const preferenceAppliedHeader: HeaderObject = {
  description: `\`wait=N\`, the wait served (N from 1 to ${maxWaitSeconds}), when the request asked for one and it applied.`,
  required: false,
  schema: { type: 'string', pattern: '^wait=[0-9]+$' },
};

/** `Location` of a run start: where what it created is read. */
export const startLocationHeader: HeaderObject = {
  description:
    'Where the run is read (Get a run, `/api/v1/runs/{jobId}`), or for a deferred run Get a deferred run ' +
    '(`/api/v1/deferred-runs/{deferredJobId}`).',
  required: true,
  schema: { type: 'string', format: 'uri-reference' },
};
