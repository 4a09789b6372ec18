/**
 * Which step items the run event stream reads while its run is in progress
 * (functions/domain/stream-reads.ts), as pure rules: a counted step the counters tell is never
 * read, so no output is read before its `output` event is due.
 */
import { describe, expect, it } from 'vitest';
import { nothingSent, StepSent } from '../functions/domain/run-stream.ts';
import type { StepRecord } from '../functions/domain/run-view.ts';
import { countedStatuses, frontierWindow, stepsToRead, streamSteps } from '../functions/domain/stream-reads.ts';
import type { Canvas, CanvasNode } from '../functions/nodes/catalogue/canvas.ts';

const node = (id: string, type: CanvasNode['type'] = 'TextConsole'): CanvasNode => ({
  id,
  type,
  label: id,
  config: {},
  position: { x: 0, y: 0 },
});
const edge = (source: string, target: string) => ({
  id: `${source}-${target}`,
  source,
  target,
  sourceHandle: 'text',
  targetHandle: 'text',
});
/** s0 → s1 → … → s(n-1): only the last is a final step. */
const chain = (n: number, type?: (i: number) => CanvasNode['type']): Canvas => ({
  nodes: Array.from({ length: n }, (_, i) => node(`s${i}`, type?.(i) ?? (i === 0 ? 'TextEntry' : 'TextConsole'))),
  edges: Array.from({ length: n - 1 }, (_, i) => edge(`s${i}`, `s${i + 1}`)),
});
const order = (n: number) => Array.from({ length: n }, (_, i) => `s${i}`);
const counted = (n: number, skipped = 0) => ({
  stepsCompleted: n - skipped,
  stepsSkipped: skipped,
  doneSteps: new Set(order(n)),
});

describe('the stream’s step reads', () => {
  it('read only the step that may have started while a chain runs: no counted step’s item, so no output', () => {
    const reads = stepsToRead({
      canvas: chain(20),
      order: order(20),
      run: counted(19),
      known: new Map(),
      sent: nothingSent(20),
      window: 0,
    });
    expect(reads.read).toEqual(['s19']);
  });

  it('read a final step’s item (its outputs) once its output is due, and never again after it went', () => {
    const run = { stepsCompleted: 20, stepsSkipped: 0, doneSteps: new Set(order(20)) };
    const due = stepsToRead({
      canvas: chain(20),
      order: order(20),
      run,
      known: new Map(),
      sent: nothingSent(20),
      window: 0,
    });
    expect(due.read).toEqual(['s19']);
    const sent = { ...nothingSent(20), steps: order(20).map(() => StepSent.output) };
    expect(stepsToRead({ canvas: chain(20), order: order(20), run, known: new Map(), sent, window: 0 }).read).toEqual(
      [],
    );
  });

  it('read the model steps a due output descends from (its lineage), not the others', () => {
    const canvas = chain(4, (i) => (i === 0 ? 'TextEntry' : i === 1 ? 'LlmWorker' : 'TextConsole'));
    const run = { stepsCompleted: 4, stepsSkipped: 0, doneSteps: new Set(order(4)) };
    const reads = stepsToRead({ canvas, order: order(4), run, known: new Map(), sent: nothingSent(4), window: 0 });
    expect(reads.read).toEqual(['s1', 's3']);
  });

  it('tell a counted step’s end from the counters, and read only those they cannot tell', () => {
    const skipped: StepRecord = { status: 'skipped' };
    expect([...countedStatuses(counted(3), new Map()).values()]).toEqual(['completed', 'completed', 'completed']);
    // One skip among three, and the skip known: the other two completed.
    expect(countedStatuses(counted(3, 1), new Map([['s1', skipped]]))).toEqual(
      new Map([
        ['s0', 'completed'],
        ['s2', 'completed'],
      ]),
    );
    // One skip among three, none known: ambiguous, every one of them is read.
    const reads = stepsToRead({
      canvas: chain(4),
      order: order(4),
      run: counted(3, 1),
      known: new Map(),
      sent: nothingSent(4),
      window: 0,
    });
    expect(reads.read).toEqual(['s0', 's1', 's2', 's3']);
    expect(streamSteps(counted(3, 1), new Map([['s1', skipped]])).get('s0')).toEqual({ status: 'completed' });
  });

  it('look at a wide run’s ready steps a window at a time, each in turn', () => {
    const width = 60;
    const canvas: Canvas = { nodes: order(width).map((id) => node(id, 'TextEntry')), edges: [] };
    const run = { stepsCompleted: 0, stepsSkipped: 0, doneSteps: new Set<string>() };
    const seen = new Set<string>();
    let window = 0;
    for (let i = 0; i < 3; i++) {
      const reads = stepsToRead({
        canvas,
        order: order(width),
        run,
        known: new Map(),
        sent: nothingSent(width),
        window,
      });
      expect(reads.read.length).toBeLessThanOrEqual(frontierWindow);
      for (const id of reads.read) seen.add(id);
      window = reads.nextWindow;
    }
    expect(seen.size).toBe(width);
  });
});
