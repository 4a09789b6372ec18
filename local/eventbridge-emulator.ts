import { randomUUID } from 'node:crypto';
import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { dirname, join } from 'node:path';
import { listenLocal } from './api-gateway.ts';
import { localAwsConfig } from './emulators.ts';
import { stateDir } from './state.ts';

/**
 * A tiny EventBridge for the local default and the tests: an HTTP server speaking the AWS JSON 1.1
 * protocol for `AWSEvents.PutEvents` only, so the publisher's real SDK call runs locally. Each entry
 * put becomes one line of a JSON-lines file, shaped as EventBridge delivers an event to a rule's
 * target (`id`, `detail-type`, `source`, `account`, `time`, `region`, `resources`, `detail`). A test
 * hook (`POST /_faults`) makes the next calls on a bus refuse entries, as a throttled bus does.
 */

/** The events file of the local default (`npm start`): `.local/events.jsonl`. */
export const operatorEventsFile = join(stateDir, 'events.jsonl');

/** The operator event bus of a local prefix (the stack names its own after the stack). */
export const operatorEventBusName = (prefix: string) => `${prefix}-operator-events`;

/** An event as the emulator writes it (and EventBridge hands it to a target). */
export interface DeliveredEvent {
  version: '0';
  id: string;
  'detail-type': string;
  source: string;
  account: string;
  time: string;
  region: string;
  resources: string[];
  detail: Record<string, unknown>;
  /** Not in EventBridge's envelope: the bus it was put on (one file may hold several). */
  'event-bus-name': string;
}

/** What the next PutEvents calls on one bus do instead of putting every entry. */
export interface EventBridgeFaults {
  /** Refuse every entry of the next `calls` calls with `errorCode` (as PutEvents answers a throttle: 200, per entry). */
  refuseCalls?: number;
  errorCode?: string;
}

export interface PutEventsEntry {
  EventBusName?: string;
  Source?: string;
  DetailType?: string;
  Detail?: string;
  /** The JSON protocol sends a timestamp as epoch seconds. */
  Time?: number | string;
  Resources?: string[];
}

/**
 * The most a PutEvents request's entries may weigh together: 1 MB since EventBridge raised it from
 * 256 KB (https://aws.amazon.com/blogs/compute/more-room-to-build-serverless-services-now-support-payloads-up-to-1-mb/,
 * read 2026-12-07), each entry weighed as EventBridge weighs it: 14 bytes for a `Time`, and the
 * UTF-8 bytes of `Source`, `DetailType`, `Detail` and each of `Resources`
 * (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-putevent-size.html).
 */
export const maxPutEventsBytes = 1024 * 1024;

export const putEventsEntryBytes = (entry: PutEventsEntry) =>
  (entry.Time !== undefined ? 14 : 0) +
  Buffer.byteLength(entry.Source ?? '') +
  Buffer.byteLength(entry.DetailType ?? '') +
  Buffer.byteLength(entry.Detail ?? '') +
  (entry.Resources ?? []).reduce((sum, resource) => sum + Buffer.byteLength(resource), 0);

const readBody = async (request: IncomingMessage): Promise<string> => {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
};

const answer = (response: ServerResponse, status: number, body: unknown) => {
  response.writeHead(status, { 'content-type': 'application/x-amz-json-1.1', 'x-amzn-requestid': randomUUID() });
  response.end(JSON.stringify(body));
};

const isoTime = (time: PutEventsEntry['Time']) =>
  time === undefined
    ? new Date().toISOString()
    : new Date(typeof time === 'number' ? time * 1000 : time).toISOString().replace(/\.\d{3}Z$/, 'Z');

export interface EventBridgeEmulator {
  endpoint: string;
  stop(): Promise<void>;
}

/** Starts the emulator on loopback. `fileFor` names the JSON-lines file of each bus. */
export const startEventBridge = async (options: {
  port?: number;
  fileFor: (busName: string) => string;
}): Promise<EventBridgeEmulator> => {
  const faults = new Map<string, Required<EventBridgeFaults>>();
  const server = createServer(async (request, response) => {
    try {
      const body = await readBody(request);
      if (request.method === 'GET' && request.url?.startsWith('/_faults?')) {
        const bus = new URL(request.url, 'http://local').searchParams.get('bus') ?? '';
        return answer(response, 200, faults.get(bus) ?? { refuseCalls: 0 });
      }
      if (request.method === 'POST' && request.url === '/_faults') {
        const { bus, ...set } = JSON.parse(body) as EventBridgeFaults & { bus: string };
        faults.set(bus, { refuseCalls: set.refuseCalls ?? 0, errorCode: set.errorCode ?? 'ThrottlingException' });
        return answer(response, 200, {});
      }
      const target = request.headers['x-amz-target'];
      if (target !== 'AWSEvents.PutEvents') {
        return answer(response, 400, { __type: 'UnknownOperationException', message: `${String(target)}` });
      }
      const { Entries = [] } = JSON.parse(body) as { Entries?: PutEventsEntry[] };
      if (Entries.length === 0 || Entries.length > 10) {
        return answer(response, 400, {
          __type: 'ValidationException',
          message: 'Entries must hold between 1 and 10 entries',
        });
      }
      if (Entries.reduce((sum, entry) => sum + putEventsEntryBytes(entry), 0) > maxPutEventsBytes) {
        return answer(response, 400, {
          __type: 'ValidationException',
          message: `Total size of the entries in the request is over the limit of ${maxPutEventsBytes} bytes`,
        });
      }
      const results = Entries.map((entry) => {
        const bus = entry.EventBusName ?? 'default';
        const fault = faults.get(bus);
        if (fault && fault.refuseCalls > 0) {
          return { ErrorCode: fault.errorCode, ErrorMessage: 'Refused by the local fault hook' };
        }
        const id = randomUUID();
        const event: DeliveredEvent = {
          version: '0',
          id,
          'detail-type': entry.DetailType ?? '',
          source: entry.Source ?? '',
          account: '000000000000',
          time: isoTime(entry.Time),
          region: localAwsConfig.region,
          resources: entry.Resources ?? [],
          detail: JSON.parse(entry.Detail ?? '{}') as Record<string, unknown>,
          'event-bus-name': bus,
        };
        const file = options.fileFor(bus);
        mkdirSync(dirname(file), { recursive: true });
        appendFileSync(file, `${JSON.stringify(event)}\n`);
        return { EventId: id };
      });
      for (const bus of new Set(Entries.map((e) => e.EventBusName ?? 'default'))) {
        const fault = faults.get(bus);
        if (fault && fault.refuseCalls > 0) fault.refuseCalls -= 1;
      }
      const failed = results.filter((r) => 'ErrorCode' in r).length;
      return answer(response, 200, { FailedEntryCount: failed, Entries: results });
    } catch (error) {
      return answer(response, 500, { __type: 'InternalException', message: (error as Error).message });
    }
  });
  const listening = await listenLocal(server, { port: options.port ?? 0, host: '127.0.0.1' }, '');
  return { endpoint: listening.baseUrl, stop: listening.close };
};

/** Tells the emulator at `endpoint` what the next calls on `bus` do (the test hook). */
export const setEventBridgeFaults = async (endpoint: string, bus: string, faults: EventBridgeFaults) => {
  const response = await fetch(`${endpoint}/_faults`, { method: 'POST', body: JSON.stringify({ bus, ...faults }) });
  if (!response.ok) throw new Error(`fault hook answered ${response.status}`);
};

/** What is left of the faults set on `bus` (the calls still to refuse). */
export const eventBridgeFaultsLeft = async (endpoint: string, bus: string): Promise<EventBridgeFaults> =>
  (await (await fetch(`${endpoint}/_faults?bus=${encodeURIComponent(bus)}`)).json()) as EventBridgeFaults;

/** The events in a JSON-lines file the emulator wrote, oldest first; none when there is no file yet. */
export const readDeliveredEvents = (file: string): DeliveredEvent[] =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter((line) => line.trim() !== '')
        .map((line) => JSON.parse(line) as DeliveredEvent)
    : [];
