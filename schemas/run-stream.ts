/**
 * GET /runs/{jobId}/events, the run's events as they happen: its operation, whose answer
 * is `text/event-stream` (functions/app/run-stream.ts writes it, functions/domain/run-stream.ts
 * makes its events and ids). Imports no other resource module: schemas/runs.ts lists it.
 */
import { streamsPerKey } from '../platform/run-stream.ts';
import type { OperationSpec } from './openapi-parts.ts';
import { ref, uuidPath } from './openapi-parts.ts';

/** The stream's grammar, in the document's words (docs/api.md, "Following a run live", says it at length). */
const grammar =
  'A `text/event-stream` (server-sent events). Each event is `event: <name>`, `id: <id>` and one `data:` line of ' +
  'JSON: `step` (a `RunStep`: one step started or ended; no result), `output` (a `RunOutput`: a final step’s ' +
  'output, as soon as it is available), `status` (a `RunStatusEvent`: the run’s status or progress changed), ' +
  'and last `done` (the final `Run`, as GET /runs/{jobId} answers it), after which the stream ends. A stream ' +
  'stays open at most 120 seconds: it then sends `retry: <ms>` and closes; reconnect with the last `id` as ' +
  '`Last-Event-ID` and only what changed since is sent, nothing twice. An id that is not one of this run’s is ' +
  'read as none: everything is sent again.';

export const runEventsOperation: OperationSpec = {
  operationId: 'GetRunEvents',
  tag: 'Runs',
  summary: 'Follow a run live',
  description:
    'The run’s events as they happen, instead of polling GET /runs/{jobId}: each step’s start and end, each ' +
    'output as it becomes available, the status and progress, and the final Run. One request counts once ' +
    'against the key’s rate limit however long it stays open. Deployed, it is served on its own address ' +
    '(the Run’s `links.events`); locally, beside every other route.',
  parameters: [
    uuidPath('jobId', 'The `jobId` returned when the run started.'),
    {
      name: 'Last-Event-ID',
      in: 'header',
      required: false,
      description: 'The `id` of the last event received: the stream resumes after it.',
      schema: { type: 'string' },
    },
  ],
  responses: {
    200: {
      description: grammar,
      // Each event's schema, as a client reads it (its data line parsed): a generated client types the events.
      content: { 'text/event-stream': { schema: ref('RunEvent') } },
    },
    204: { description: 'The `Last-Event-ID` is that of the run’s `done`: nothing more will come.' },
  },
  errorWords: {
    404: 'No such run in the team.',
    429: `Too many requests with this key, or the key already holds its most event streams open (${streamsPerKey}).`,
  },
};
