import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { idempotencyKeyHeader } from '../../schemas/runs.ts';
import type { RunStart } from '../app/start-run.ts';
import { parseRunRequest } from './body.ts';

/** What a run-start request asks for: its body, its Idempotency-Key, and the route and path it was sent to. */
export const runStartOf = (event: APIGatewayProxyEventV2): RunStart => ({
  request: parseRunRequest(event),
  idempotencyKey: event.headers[idempotencyKeyHeader.toLowerCase()],
  target: `${event.routeKey}\n${JSON.stringify(event.pathParameters ?? {})}`,
});
