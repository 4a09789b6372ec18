/**
 * GET /runs/{jobId}/events for the client: a server-sent events parser (the WHATWG
 * `text/event-stream` grammar: fields, comments, CR/LF/CRLF line ends, events dispatched on a blank
 * line) and the iterator that reads a run's events and reconnects with `Last-Event-ID` after the
 * server's cap, until `done`. No dependency: the grammar is a page long (docs/decisions.md).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { errorFromResponse, ServerError } from './errors.ts';
import type { components } from './openapi-types.ts';

type Schemas = components['schemas'];

/** One event of the stream, by name (the document's `RunEvent`); `id` is what to resume after. */
export type RunEvent = Schemas['RunEvent'];

/** A dispatched server-sent event, before its data is read as JSON. */
export interface ServerSentEvent {
  event: string;
  data: string;
  /** The last id the stream set (it carries over to events without one, as the grammar says). */
  id: string | undefined;
}

/**
 * Parses a `text/event-stream` body as it arrives: yields each event when its blank line comes, and
 * reports each `retry:` through `onRetry`. An event with no `data` is not dispatched.
 */
export async function* parseServerSentEvents(
  body: AsyncIterable<Uint8Array>,
  onRetry: (ms: number) => void = () => undefined,
): AsyncGenerator<ServerSentEvent, void, undefined> {
  const decoder = new TextDecoder();
  let buffer = '';
  let lastId: string | undefined;
  let event = '';
  let data: string[] = [];
  const line = (text: string): ServerSentEvent | undefined => {
    if (text === '') {
      const dispatched = data.length > 0 ? { event: event || 'message', data: data.join('\n'), id: lastId } : undefined;
      event = '';
      data = [];
      return dispatched;
    }
    if (text.startsWith(':')) return undefined;
    const colon = text.indexOf(':');
    const field = colon === -1 ? text : text.slice(0, colon);
    let value = colon === -1 ? '' : text.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
    else if (field === 'id' && !value.includes('\0')) lastId = value;
    else if (field === 'retry' && /^\d+$/.test(value)) onRetry(Number(value));
    return undefined;
  };
  const lines = function* (final: boolean) {
    for (;;) {
      const end = buffer.search(/\r\n|\r|\n/);
      // A lone CR at the end may be the first half of a CRLF still on its way.
      if (end === -1 || (!final && end === buffer.length - 1 && buffer[end] === '\r')) return;
      const text = buffer.slice(0, end);
      buffer = buffer.slice(end + (buffer.startsWith('\r\n', end) ? 2 : 1));
      yield text;
    }
  };
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    for (const text of lines(false)) {
      const dispatched = line(text);
      if (dispatched) yield dispatched;
    }
  }
  buffer += decoder.decode();
  for (const text of lines(true)) {
    const dispatched = line(text);
    if (dispatched) yield dispatched;
  }
}

export interface RunEventsOptions {
  /** Where the stream is (the Run's `links.events`); default: read the run once for it. */
  url?: string;
  /** Resume after this event (an `id` from an earlier read). */
  lastEventId?: string;
  signal?: AbortSignal;
}

/** What the iterator needs of the client. */
export interface RunEventsContext {
  baseUrl: string;
  headers: Record<string, string>;
  fetch: typeof fetch;
  /** The run's `links.events`, read with GET /runs/{jobId}. */
  eventsUrlOf: (jobId: string, signal?: AbortSignal) => Promise<string | undefined>;
}

const streamEvents = new Set(['step', 'output', 'status', 'done']);

/**
 * The run's events as they happen, until `done` (the final Run). After the server's cap the stream
 * closes with `retry:`: it waits that long and reconnects with the last id, so nothing is lost or
 * repeated. An answer other than the stream is the typed error of any route (`NotFoundError`, ...).
 */
export async function* runEvents(
  context: RunEventsContext,
  jobId: string,
  options: RunEventsOptions = {},
): AsyncGenerator<RunEvent, void, undefined> {
  const { signal } = options;
  const url =
    options.url ??
    (await context.eventsUrlOf(jobId, signal)) ??
    `${context.baseUrl}/runs/${encodeURIComponent(jobId)}/events`;
  let lastId = options.lastEventId;
  let retryMs = 1_000;
  for (;;) {
    signal?.throwIfAborted();
    const response = await context.fetch(url, {
      headers: {
        ...context.headers,
        accept: 'text/event-stream',
        ...(lastId === undefined ? {} : { 'last-event-id': lastId }),
      },
      ...(signal ? { signal } : {}),
    });
    // The id was the run's `done`'s: nothing more will come.
    if (response.status === 204) return;
    if (response.ok && !response.headers.get('content-type')?.startsWith('text/event-stream')) {
      await response.body?.cancel();
      throw new ServerError(response.status, { error: 'the answer is not an event stream' }, response.headers);
    }
    if (!response.ok || !response.body) {
      const text = await response.text();
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {}
      throw errorFromResponse(response.status, body, response.headers);
    }
    for await (const sse of parseServerSentEvents(response.body, (ms) => {
      retryMs = ms;
    })) {
      if (!streamEvents.has(sse.event) || sse.id === undefined) continue;
      lastId = sse.id;
      const event = { event: sse.event, id: sse.id, data: JSON.parse(sse.data) } as RunEvent;
      yield event;
      if (event.event === 'done') return;
    }
    await sleep(retryMs, undefined, signal ? { signal } : {});
  }
}
