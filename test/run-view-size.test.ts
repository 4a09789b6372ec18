/**
 * The run view's size bound (functions/domain/run-view-size.ts), without I/O: the page rule, and
 * the worst case of every part of an answer added up against Lambda's invoke result.
 */
import { describe, expect, it } from 'vitest';
import { signCursor } from '../functions/domain/cursor.ts';
import { outputsFrom, type RunRecord, runView, type StepRecord } from '../functions/domain/run-view.ts';
import {
  invokeResultBytes,
  maxStepErrorChars,
  outputPage,
  outputPageBytes,
  resultBytes,
  shownStepError,
} from '../functions/domain/run-view-size.ts';
import { maxStepsPerWorkflow } from '../functions/domain/workflow-graph.ts';
import { ok } from '../functions/http/response.ts';
import type { Canvas } from '../functions/nodes/catalogue/canvas.ts';
import { catalogue } from '../functions/nodes/catalogue/index.ts';
import type { RunResult } from '../schemas/runs.ts';
import type { NodeType } from '../schemas/workflow-words.ts';
import { canvasNode } from './support/canvas.ts';

const output = (id: string, result: RunResult) => ({
  node_id: id,
  step_type: 'TextEntry',
  result,
  ai_generated: false,
});

/** The bytes Lambda counts for a function's result: the answer itself, serialized. */
const lambdaBytes = (answer: unknown) => Buffer.byteLength(JSON.stringify(answer));

describe('the bytes of a view inside the function result', () => {
  it('count each character as the result escapes it a second time', () => {
    for (const value of ['plain', '"quoted"', '\u0001\u001f', 'é✓😀', '\\', { a: ['"', 1, null] }]) {
      const answer = ok({ value });
      const body = JSON.stringify({ value });
      // The result with an empty body, plus the body's bytes as the result holds them.
      expect(lambdaBytes({ ...answer, body: '' }) + resultBytes({ value })).toBe(lambdaBytes(answer));
      expect(resultBytes({ value })).toBeGreaterThanOrEqual(Buffer.byteLength(body));
    }
    expect(resultBytes('\u0001')).toBe(2 * 2 + 7);
  });
});

describe('a step error as a view shows it', () => {
  it('is whole up to the limit, then cut and marked, never half a surrogate pair', () => {
    expect(shownStepError('x'.repeat(maxStepErrorChars))).toBe('x'.repeat(maxStepErrorChars));
    expect(shownStepError('x'.repeat(maxStepErrorChars + 1))).toBe(`${'x'.repeat(maxStepErrorChars)}…`);
    const cut = shownStepError(`${'x'.repeat(maxStepErrorChars - 1)}😀tail`);
    expect(cut).toBe(`${'x'.repeat(maxStepErrorChars - 1)}…`);
    expect(cut.isWellFormed()).toBe(true);
  });
});

describe('a page of outputs', () => {
  const kilobyte = (id: string) => output(id, 'k'.repeat(1000));
  const one = resultBytes(kilobyte('a'));

  it('takes outputs in order while their bytes, commas included, stay within the budget', () => {
    const outputs = ['a', 'b', 'c', 'd'].map(kilobyte);
    expect(outputPage(outputs, 3 * one + 2)).toEqual({ output: outputs.slice(0, 3), rest: 3 });
    expect(outputPage(outputs, 3 * one + 1)).toEqual({ output: outputs.slice(0, 2), rest: 2 });
    expect(outputPage(outputs, 4 * one + 3)).toEqual({ output: outputs, rest: null });
    expect(outputPage([], 10)).toEqual({ output: [], rest: null });
  });

  it('is never empty: a first output over the budget alone is given with its result withheld', () => {
    const huge = output('huge', 'h'.repeat(5000));
    const page = outputPage([huge, kilobyte('b'), kilobyte('c')], 2 * one);
    expect(page.output).toEqual([{ ...huge, result: null, result_withheld: true }, kilobyte('b')]);
    expect(page.rest).toBe(2);
    // Not the first: it waits for a page of its own.
    expect(outputPage([kilobyte('a'), huge], 2 * one)).toEqual({ output: [kilobyte('a')], rest: 1 });
  });

  it('starts where a cursor names a final step, in the workflow order, whatever has finished', () => {
    const canvas: Canvas = {
      nodes: ['a', 'b', 'c', 'd'].map((id) => canvasNode(id, 'TextEntry')),
      edges: [{ id: 'e', source: 'a', target: 'b', sourceHandle: 'text', targetHandle: 'text' }],
    };
    // b, c, d are final; c has not finished, so its output is not there yet.
    const outputs = [output('b', 1), output('d', 3)];
    expect(outputsFrom(canvas, outputs, 'c')).toEqual([output('d', 3)]);
    expect(outputsFrom(canvas, outputs, 'b')).toEqual(outputs);
    expect(outputsFrom(canvas, outputs, 'a')).toBeUndefined();
  });
});

describe('the worst answer a run view can be', () => {
  const longestType = (Object.keys(catalogue) as NodeType[]).reduce((a, b) => (b.length > a.length ? b : a));
  const worstText = (chars: number) => '\u0001'.repeat(chars);
  const nodeId = (i: number) => `${'n'.repeat(60)}${String(i).padStart(4, '0')}`;

  it('fits the invoke result: 500 failed steps with long errors, a full page of outputs, the cursor', () => {
    const ids = Array.from({ length: maxStepsPerWorkflow }, (_, i) => nodeId(i));
    const canvas: Canvas = { nodes: ids.map((id) => canvasNode(id, longestType)), edges: [] };
    const run: RunRecord = {
      jobId: crypto.randomUUID(),
      status: 'failed',
      stepsTotal: ids.length,
      doneSteps: new Set(),
    };
    // Only one step of a run can fail; every one does here, each error far past what a view shows.
    const steps = new Map<string, StepRecord>(ids.map((id) => [id, { status: 'failed', error: worstText(100_000) }]));
    const view = runView(run, steps, canvas);
    expect(view.steps).toHaveLength(maxStepsPerWorkflow);
    expect(view.steps.every((s) => s.error?.length === maxStepErrorChars + 1)).toBe(true);
    const cursor = signCursor(
      Buffer.alloc(32),
      { list: 'run-output', teamId: 't', jobId: run.jobId },
      { node: nodeId(1) },
    );
    const withoutOutputs = ok({ ...view, output: [], output_next: cursor });
    // The keyed handler's answer adds no header to a 200; 2 KiB is left for any that comes.
    const headroom = 2048;
    const worst = lambdaBytes(withoutOutputs) + outputPageBytes + headroom;
    expect(worst).toBeLessThanOrEqual(invokeResultBytes);
    // What the steps take at worst, for the guide: about 1.5 MB.
    expect(lambdaBytes(withoutOutputs)).toBeGreaterThan(1_400_000);
  });

  it('gives one output of a full step item (400 KB, every character escaped) whole: below the budget', () => {
    const canvas: Canvas = { nodes: [canvasNode('text', 'TextEntry')], edges: [] };
    const run: RunRecord = {
      jobId: crypto.randomUUID(),
      status: 'completed',
      stepsTotal: 1,
      doneSteps: new Set(['text']),
    };
    const step: StepRecord = { status: 'completed', outputs: { text: worstText(400 * 1024) } };
    const [only] = runView(run, new Map([['text', step]]), canvas).output;
    if (!only) throw new Error('the completed step has no output');
    expect(resultBytes(only)).toBeGreaterThan(2_800_000);
    expect(outputPage([only]).output).toEqual([only]);
  });
});
