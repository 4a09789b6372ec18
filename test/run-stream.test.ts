/**
 * The run event stream's pure rules (functions/domain/run-stream.ts): what an id encodes and that
 * only an id of this run decodes, and that the events between any two views of a run, followed
 * from any id the stream gave, send each change once.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  afterDone,
  decodeEventId,
  encodeEventId,
  eventsFor,
  formatEvent,
  nothingSent,
  type SentState,
  StepSent,
} from '../functions/domain/run-stream.ts';
import { runStatuses, stepStatuses } from '../schemas/run-words.ts';
import type { Run, StepViewStatus } from '../schemas/runs.ts';

const stateArb = (steps: number): fc.Arbitrary<SentState> =>
  fc.record({
    status: fc.option(fc.constantFrom(...runStatuses), { nil: null }),
    progress: fc.integer({ min: 0, max: 100 }),
    done: fc.boolean(),
    steps: fc.array(fc.constantFrom(StepSent.none, StepSent.started, StepSent.ended, StepSent.output), {
      minLength: steps,
      maxLength: steps,
    }),
  });

/** A run of `n` steps, the last one final, each at the given status. */
const viewOf = (statuses: StepViewStatus[], status: Run['status'] = 'processing'): Run => {
  const done = statuses.filter((s) => s === 'completed').length;
  const last = statuses.length - 1;
  return {
    jobId: '0b7c8a4e-2f0a-4c56-9d7e-2d3c4b5a6f70',
    status,
    progress: statuses.length === 0 ? 0 : Math.floor((done * 100) / statuses.length),
    steps: statuses.map((s, i) => ({ node_id: `n${i}`, step_type: 'TextConsole', status: s })),
    output:
      statuses[last] === 'completed'
        ? [{ node_id: `n${last}`, step_type: 'TextConsole', result: 'r', ai_generated: false }]
        : [],
  };
};

describe('event ids', () => {
  it('decode to the state they encode, for any run size up to 500 steps', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 500 }).chain((n) => stateArb(n)),
        (state) => {
          const id = encodeEventId(state);
          expect(id).toMatch(/^[A-Za-z0-9_-]+$/);
          expect(decodeEventId(id, state.steps.length)).toEqual(state);
        },
      ),
      { seed: 2026_11_27 },
    );
  });

  it('take about 175 characters for 500 steps', () => {
    expect(encodeEventId(nothingSent(500)).length).toBeLessThanOrEqual(176);
  });

  it('read as none when they are not an id of a run of this size, or not an id at all', () => {
    const id = encodeEventId(nothingSent(7));
    for (const other of [undefined, '', 'x', `${id}=`, `${id}A`, id.slice(0, -1), '!!!!', 'A'.repeat(5000)])
      expect(decodeEventId(other, 7), String(other)).toBeUndefined();
    expect(decodeEventId(id, 8)).toBeUndefined();
    expect(decodeEventId(id, 6)).toBeUndefined();
    // A layout version, status or progress out of range, or bits past the last step.
    const bytes = Buffer.from(id, 'base64url');
    for (const [at, value] of [
      [0, 2],
      [1, runStatuses.length + 1],
      [2, 101],
      [3, 2],
      [bytes.length - 1, 0b11000000],
    ] as const) {
      const altered = Buffer.from(bytes);
      altered[at] = value;
      expect(decodeEventId(altered.toString('base64url'), 7), `byte ${at}`).toBeUndefined();
    }
  });
});

describe('events between two views', () => {
  it('send each step’s start and end once, each output once after its step’s end, and the status when it changed', () => {
    const order: StepViewStatus[][] = [
      ['queued', 'queued', 'queued'],
      ['completed', 'processing', 'queued'],
      ['completed', 'completed', 'completed'],
    ];
    let sent = nothingSent(3);
    const all: string[] = [];
    for (const statuses of order) {
      for (const event of eventsFor(viewOf(statuses), sent)) {
        all.push(`${event.event} ${JSON.stringify(event.data)}`);
        sent = event.state;
      }
    }
    expect(all).toEqual([
      'status {"status":"processing","progress":0}',
      'step {"node_id":"n0","step_type":"TextConsole","status":"completed"}',
      'step {"node_id":"n1","step_type":"TextConsole","status":"processing"}',
      'status {"status":"processing","progress":33}',
      'step {"node_id":"n1","step_type":"TextConsole","status":"completed"}',
      'step {"node_id":"n2","step_type":"TextConsole","status":"completed"}',
      'output {"node_id":"n2","step_type":"TextConsole","result":"r","ai_generated":false}',
      'status {"status":"processing","progress":100}',
    ]);
    expect(eventsFor(viewOf(order[2]!), sent)).toEqual([]);
    expect(decodeEventId(encodeEventId(afterDone(sent)), 3)?.done).toBe(true);
  });

  it('resumed from any event’s id, send exactly what an unbroken read sends after it', () => {
    // Views of a run over time: each step starts at one view and ends at the same or a later one (or
    // never), as steps do; the ended status is any the service shows.
    const ended = stepStatuses.filter((s) => s !== 'queued' && s !== 'processing');
    const progressions = fc.integer({ min: 1, max: 6 }).chain((count) =>
      fc
        .array(
          fc.record({
            start: fc.integer({ min: 0, max: count }),
            length: fc.integer({ min: 0, max: count }),
            end: fc.constantFrom(...ended),
          }),
          { minLength: 4, maxLength: 4 },
        )
        .map((steps) =>
          Array.from({ length: count }, (_, view) =>
            steps.map(
              ({ start, length, end }): StepViewStatus =>
                view >= start + length ? end : view >= start ? 'processing' : 'queued',
            ),
          ),
        ),
    );
    fc.assert(
      fc.property(progressions, fc.nat(), (views, cut) => {
        // One unbroken read of the views, one after another.
        let sent = nothingSent(4);
        const unbroken: { line: string; id: string }[] = [];
        for (const statuses of views)
          for (const event of eventsFor(viewOf(statuses), sent)) {
            sent = event.state;
            unbroken.push({ line: `${event.event} ${JSON.stringify(event.data)}`, id: encodeEventId(event.state) });
          }
        if (unbroken.length === 0) return;
        // Broken after event `at`, resumed at the last view from its id: the rest of the last view's truth.
        const at = cut % unbroken.length;
        const resumed = eventsFor(viewOf(views.at(-1)!), decodeEventId(unbroken[at]!.id, 4)!);
        const again = eventsFor(viewOf(views.at(-1)!), sent);
        expect(again).toEqual([]);
        // Nothing of what went before the break comes again.
        const before = new Set(unbroken.slice(0, at + 1).map((e) => e.line));
        for (const event of resumed) expect(before.has(`${event.event} ${JSON.stringify(event.data)}`)).toBe(false);
        // And after it, both reads end in the same state.
        let end = decodeEventId(unbroken[at]!.id, 4)!;
        for (const event of resumed) end = event.state;
        expect(end).toEqual(sent);
      }),
      { seed: 2026_11_27 },
    );
  });

  it('writes one event as text/event-stream: its name, id and one data line', () => {
    expect(formatEvent('status', 'AQ', { status: 'queued', progress: 0 })).toBe(
      'event: status\nid: AQ\ndata: {"status":"queued","progress":0}\n\n',
    );
  });
});
