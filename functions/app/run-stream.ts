import {
  streamCapSeconds,
  streamFullReadMs,
  streamKeepAliveMs,
  streamPollMs,
  streamRetryMs,
} from '../../platform/run-stream.ts';
import type { Run } from '../../schemas/runs.ts';
import type { Deps } from '../deps.ts';
import { terminalNodeIds, topologicalOrder } from '../domain/canvas-order.ts';
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
  StepSent,
} from '../domain/run-stream.ts';
import { runView, type StepRecord } from '../domain/run-view.ts';
import { showsEnd, stepsToRead, streamSteps, withoutOutputs } from '../domain/stream-reads.ts';
import type { Canvas } from '../nodes/catalogue/canvas.ts';
import { canvasOf } from '../store/canvases.ts';
import {
  type RunProgress,
  readRunItem,
  readRunProgress,
  readStepItemsEventually,
  runMarkOf,
} from '../store/run/index.ts';
import { linkedOutput, readRunAndItems, readRunWithLinks, visibleRun, withStreamLink } from './read-run.ts';

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

/**
 * `timing` (the platform's unless given) with its cap brought forward to `until` when that comes
 * first: a run token's stream ends by the token's end (with `retry:`, as at the cap), and its
 * reconnect is then refused, so a token is never read past its `expiresAt`.
 */
export const timingUntil = (deps: Deps, timing: StreamTiming | undefined, until: Date | undefined) => {
  if (!until) return timing;
  const base = timing ?? streamTiming;
  return { ...base, capMs: Math.max(0, Math.min(base.capMs, until.getTime() - deps.now().getTime())) };
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

/** The run as the stream last showed it: its view (every due output, unlinked) and its item's mark. */
interface Snapshot {
  view: Run;
  mark: string;
  /** The run item's counted steps (a later look that counted fewer is older: it is not taken). */
  counted: number;
  /** An ended run's `done`: the Run as GET /runs/{jobId} answers it, from the same read. */
  done?: Run;
}

/**
 * The ended run's last look: its partition, strongly consistent (read after its end, it shows the
 * end), once, for its last events (every output) and its `done` (the Run as GET answers it).
 */
const endedSnapshot = async (deps: Deps, reader: Reader, jobId: string): Promise<Snapshot> => {
  const { view, whole, run } = await readRunAndItems(deps, reader.teamId, jobId, reader.workflowIds);
  return { view: whole, mark: runMarkOf(run), counted: run.doneSteps.size, done: withStreamLink(deps, view) };
};

/**
 * A run in progress as the stream sees it (functions/domain/stream-reads.ts): the run item, and
 * the step items the stream still needs, eventually consistent. Keeps the items read (a final
 * step's outputs until its `output` went). A look whose step items are older than the run item it
 * follows (a counted step's item not showing its end) shows nothing: undefined, looked at again.
 */
const progressWatch = (deps: Deps, jobId: string, canvas: Canvas) => {
  const order = topologicalOrder(canvas);
  const known = new Map<string, StepRecord>();
  let window = 0;
  return {
    order,
    look: async (run: RunProgress, sent: SentState): Promise<Snapshot | undefined> => {
      const plan = stepsToRead({ canvas, order, run, known, sent, window });
      window = plan.nextWindow;
      const items = plan.read.length > 0 ? await readStepItemsEventually(deps, jobId, plan.read) : new Map();
      if (plan.read.some((nodeId) => run.doneSteps.has(nodeId) && !showsEnd(items.get(nodeId)))) return undefined;
      // What was read only moves a step on: an older answer never takes a claim or an end back.
      for (const [nodeId, item] of items) if (!showsEnd(known.get(nodeId))) known.set(nodeId, item);
      const view = runView(run, streamSteps(run, known), canvas);
      return { view, mark: runMarkOf(run), counted: run.doneSteps.size };
    },
    /** Drops the outputs no event will send again: a final step's once its `output` went, any other's. */
    sent: (sent: SentState) => {
      const finals = new Set(terminalNodeIds(canvas));
      for (const [nodeId, step] of known) {
        if (!finals.has(nodeId) || sent.steps[order.indexOf(nodeId)] === StepSent.output)
          known.set(nodeId, withoutOutputs(step));
      }
    },
  };
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
 * GET /runs/{jobId}/events. The run item is read strongly consistent (its 404 comes before the
 * stream opens; a run just started is found), `lastEventId` decoded (anything not an id of this
 * run reads as nothing sent), then `follow` writes what differs from what was sent, and keeps
 * watching: the run item each `pollMs` (one eventually consistent GetItem), and when it moved or
 * every `fullReadMs` (a model step's claim is written to its step item alone) the step items the
 * stream still needs (functions/domain/stream-reads.ts), eventually consistent: a step's outputs
 * are read only when its `output` event is due. At the run's end the partition is read strongly
 * consistent, once, as GET /runs/{jobId} reads it, for its last events and `done` (the Run as GET
 * /runs/{jobId} answers it); then it returns. At `capMs` it writes `retry:` and returns.
 */
export const openRunEvents = async (
  deps: Deps,
  reader: Reader,
  jobId: string,
  lastEventId: string | undefined,
  timing: StreamTiming = streamTiming,
): Promise<OpenedRunEvents> => {
  const item = await readRunItem(deps, jobId);
  visibleRun(item, reader.teamId, jobId, reader.workflowIds);
  const watch = progressWatch(deps, jobId, await canvasOf(deps, item.workflowId, item.workflowVersion));
  const initial = decodeEventId(lastEventId, watch.order.length) ?? nothingSent(watch.order.length);
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  /** The run at `run`'s look: whole once it ended; undefined when the look must be made again. */
  const lookAt = (run: RunProgress, sent: SentState) =>
    hasEnded(run) ? endedSnapshot(deps, reader, jobId) : watch.look(run, sent);
  const follow = async (sink: EventSink) => {
    const openedAt = deps.now().getTime();
    let lastFullRead = openedAt;
    let lastWrite = openedAt;
    let sent: SentState = initial;
    let current = await lookAt(item, sent);
    // Its step items were older than the run item: looked at again, a poll later, up to the cap.
    while (current === undefined) {
      if (deps.now().getTime() - openedAt >= timing.capMs) {
        sink.write(formatRetry(timing.retryMs));
        return;
      }
      await sleep(timing.pollMs);
      current = await lookAt(item, sent);
    }
    let behind = false;
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
      watch.sent(sent);
      if (hasEnded(current.view)) {
        const run = current.done ?? (await readRunWithLinks(deps, reader.teamId, jobId, reader.workflowIds));
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
      const run = await readRunProgress(deps, jobId);
      // The run expired under the stream (its retention): nothing more will come.
      if (run === undefined) return;
      // An eventually consistent answer older than the last one taken: the next look reads again.
      if (run.doneSteps.size < current.counted) continue;
      if (behind || runMarkOf(run) !== current.mark || now - lastFullRead >= timing.fullReadMs) {
        const next = await lookAt(run, sent);
        behind = next === undefined;
        if (next) current = next;
        lastFullRead = now;
      }
    }
  };
  return { finished: initial.done, follow };
};
