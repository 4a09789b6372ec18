import { Ajv2020 } from 'ajv/dist/2020.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadersWithoutValue } from '../functions/domain/loader-inputs.ts';
import { apiInputKeys, buildWorkflowGraph } from '../functions/domain/workflow-graph.ts';
import { workflowInputsSchema } from '../functions/domain/workflow-inputs.ts';
import type { Canvas } from '../functions/nodes/catalogue/canvas.ts';
import { catalogue } from '../functions/nodes/catalogue/index.ts';
import { nodeTypes } from '../schemas/workflow-words.ts';
import { createWorkflowExamples, type WorkflowStep } from '../schemas/workflows.ts';
import { canvasNode } from './support/canvas.ts';

const canvasOf = (steps: readonly WorkflowStep[]): Canvas => {
  const built = buildWorkflowGraph(steps);
  if (!built.ok) throw new Error(`not a valid workflow: ${JSON.stringify(built)}`);
  return built.canvas;
};

const ajv = new Ajv2020({ strict: true, allErrors: true });
ajv.addKeyword('x-contentTypes');

const fileId = 'file_0f8fad5b-d9cb-469f-a165-70867728950e';

describe('workflowInputsSchema', () => {
  it('is a valid 2020-12 schema with a property per apiInputKey, typed by its step', () => {
    const canvas = canvasOf([
      { key: 'topic', type: 'TextEntry', config: { text: 'otters', apiInputKey: 'topic' } },
      { key: 'photo', type: 'ImageLoader', config: { apiInputKey: 'photo' } },
      { key: 'spare', type: 'ImageLoader', config: { url: 'https://example.com/a.png', apiInputKey: 'spare' } },
      { key: 'plain', type: 'TextEntry', config: { text: 'x' } },
    ]);
    const schema = workflowInputsSchema({ canvas });
    expect(ajv.validateSchema(schema)).toBe(true);
    expect(Object.keys(schema.properties)).toEqual(['topic', 'photo', 'spare']);
    expect(schema.properties.topic).toMatchObject({ type: 'string', default: 'otters' });
    expect(schema.properties.photo?.['x-contentTypes']).toEqual(['image/png', 'image/jpeg', 'image/webp', 'image/gif']);
    expect(schema.required).toEqual(['photo']);
    expect(schema.additionalProperties).toBe(false);
    const validate = ajv.compile(schema);
    expect(validate({ photo: fileId })).toBe(true);
    expect(validate({ photo: 'https://example.com/otter.png', topic: 'seals' })).toBe(true);
    expect(validate({})).toBe(false);
    expect(validate({ photo: 'http://example.com/otter.png' })).toBe(false);
    expect(validate({ photo: fileId, other: 'x' })).toBe(false);
  });

  it('describes every example workflow', () => {
    for (const { value } of Object.values(createWorkflowExamples)) {
      const schema = workflowInputsSchema({ canvas: canvasOf(value.steps as WorkflowStep[]) });
      expect(ajv.validateSchema(schema)).toBe(true);
    }
  });

  it('requires and allows exactly what the start’s own rules do, on generated canvases of every node type with a run input', () => {
    const accepting = nodeTypes.filter((type) => catalogue[type].acceptsApiInputKey);
    // A step of such a type, with its run input's key or none, and its own value (`url`, `data`, `fileId`) or none.
    const step = fc.record({
      type: fc.constantFrom(...accepting),
      key: fc.option(fc.constantFrom('a', 'b', 'c', 'd'), { nil: undefined }),
      own: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.array(step, { maxLength: 6 }), fc.subarray(['a', 'b', 'c', 'd', 'e']), (steps, given) => {
        const seen = new Set<string>();
        const nodes = steps.map((s, i) => {
          // Two steps never share a key (the graph validation refuses that).
          const key = s.key !== undefined && !seen.has(s.key) ? s.key : undefined;
          if (key !== undefined) seen.add(key);
          const own = s.own ? { url: 'https://example.com/x', data: 1, fileId: 'file_x', text: 't' } : {};
          return canvasNode(`s${i}`, s.type, { ...own, ...(key !== undefined && { apiInputKey: key }) });
        });
        const canvas = { nodes, edges: [] };
        const inputs = Object.fromEntries(given.map((key) => [key, fileId]));
        const validate = ajv.compile(workflowInputsSchema({ canvas }));
        const known = apiInputKeys(canvas);
        const startRefuses =
          given.some((key) => !known.includes(key)) || loadersWithoutValue(canvas, inputs).length > 0;
        expect(validate(inputs)).toBe(!startRefuses);
      }),
    );
  });
});
