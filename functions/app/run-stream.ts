import {
  streamCapSeconds,
  streamFullReadMs,
  streamKeepAliveMs,
  streamPollMs,
  streamRetryMs,
} from '../../platform/run-stream.ts';
import type { Run } from '../../schemas/runs.ts';
import type { Deps } from '../deps.ts';
import {
  afterDone,
  decodeEventId,
  encodeEventId,
  eventsFor,
  formatEvent,
  formatRetry,
  hasEnded,
  nothingSent,
  type SentState,
} from '../domain/run-stream.ts';
import { readRunMark, runMarkOf } from '../store/run/index.ts';
import { linkedOutput, readRunView, readRunWithLinks } from './read-run.ts';

/** The stream's timing; the defaults are the platform's (platform/run-stream.ts), tests pass their own. */
export interface StreamTiming {
  capMs: number;
  pollMs: number;
  fullReadMs: number;
  retryMs: number;
  keepAliveMs: number;
}

export const streamTiming: StreamTiming = {
  capMs: streamCapSeconds * 1000,
  pollMs: streamPollMs,
  fullReadMs: streamFullReadMs,
  retryMs: streamRetryMs,
  keepAliveMs: streamKeepAliveMs,
};

/** Where the stream writes: text as it goes; `closed` once the caller went away. */
export interface EventSink {
  write(text: string): void;
  readonly closed: boolean;
}

/** Who reads: the key's team and the workflows it is limited to (GET /runs/{jobId}'s rule). */
export interface Reader {
  teamId: string;
  workflowIds: readonly string[];
}

/** The run as the stream compares it: its view (every output, unlinked) and its item's mark. */
interface Snapshot {
  view: Run;
  mark: string;
}

/** The run as GET /runs/{jobId} reads it, with the same refusal (another team's run is not found). */
const snapshot = async (deps: Deps, reader: Reader, jobId: string): Promise<Snapshot> => {
  const { run, view } = await readRunView(deps, reader.teamId, jobId, reader.workflowIds);
  return { view, mark: runMarkOf(run) };
};

/** A comment line: no event, but bytes on the wire (every SSE parser skips it). */
const keepAlive = ': keep-alive\n\n';

/** A stream about to open: whether anything remains to send, and the loop that sends it. */
export interface OpenedRunEvents {
  /** The `Last-Event-ID` was the run's `done`'s: nothing more will come (the handler answers 204). */
  finished: boolean;
  follow(sink: EventSink): Promise<void>;
}

/**
 * GET /runs/{jobId}/events. The run is read (its 404 comes before the stream opens),
 * `lastEventId` decoded (anything not an id of this run reads as nothing sent), then `follow`
 * writes what differs from what was sent, and keeps watching: the run item's mark each `pollMs`
 * (one eventually consistent GetItem), the whole partition when it moved or every `fullReadMs`
 * (a model step's claim is written to its step item alone). At the run's end it writes `done`
 * (the Run as GET /runs/{jobId} answers it) and returns; at `capMs` it writes `retry:` and returns.
 */
export const openRunEvents = async (
  deps: Deps,
  reader: Reader,
  jobId: string,
  lastEventId: string | undefined,
  timing: StreamTiming = streamTiming,
): Promise<OpenedRunEvents> => {
  let current = await snapshot(deps, reader, jobId);
  const initial = decodeEventId(lastEventId, current.view.steps.length) ?? nothingSent(current.view.steps.length);
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const follow = async (sink: EventSink) => {
    const openedAt = deps.now().getTime();
    let lastFullRead = openedAt;
    let lastWrite = openedAt;
    let sent: SentState = initial;
    const write = (text: string) => {
      sink.write(text);
      lastWrite = deps.now().getTime();
    };
    for (;;) {
      for (const event of eventsFor(current.view, sent)) {
        const data = event.event === 'output' ? await linkedOutput(deps, reader.teamId, event.data) : event.data;
        write(formatEvent(event.event, encodeEventId(event.state), data));
        sent = event.state;
      }
      if (hasEnded(current.view)) {
        const run = await readRunWithLinks(deps, reader.teamId, jobId, reader.workflowIds);
        sent = afterDone(sent);
        write(formatEvent('done', encodeEventId(sent), run));
        return;
      }
      if (sink.closed) return;
      await sleep(timing.pollMs);
      const now = deps.now().getTime();
      if (now - openedAt >= timing.capMs) {
        write(formatRetry(timing.retryMs));
        return;
      }
      if (now - lastWrite >= timing.keepAliveMs) write(keepAlive);
      const mark = await readRunMark(deps, jobId);
      // The run expired under the stream (its retention): nothing more will come.
      if (mark === undefined) return;
      if (mark !== current.mark || now - lastFullRead >= timing.fullReadMs) {
        current = await snapshot(deps, reader, jobId);
        lastFullRead = now;
      }
    }
  };
  return { finished: initial.done, follow };
};
