import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { rootNodeIds, terminalNodeIds, topologicalOrder } from '../functions/domain/canvas-order.ts';
import { columnWidth, layeredLayout, rowHeight } from '../functions/domain/layout.ts';
import {
  apiInputKeys,
  apiInputTargets,
  buildWorkflowGraph,
  maxStepsPerWorkflow,
  validateCanvas,
} from '../functions/domain/workflow-graph.ts';
import type { Canvas, CanvasEdge } from '../functions/nodes/catalogue/canvas.ts';
import { canConnect, catalogue, type NodeSpec } from '../functions/nodes/catalogue/index.ts';
import type { ValidationIssue, WorkflowStep, WorkflowStepInput } from '../schemas/workflows.ts';

const step = (key: string, type: string, extra: Partial<WorkflowStep> = {}): WorkflowStep => ({ key, type, ...extra });

/** The canvas of `steps`, failing the test if they are refused. */
const canvasOf = (steps: WorkflowStep[]): Canvas => {
  const result = buildWorkflowGraph(steps);
  if (!result.ok) throw new Error(`refused: ${JSON.stringify(result)}`);
  return result.canvas;
};

/** The issues of `steps`, failing the test if they are accepted or have an unknown type. */
const issuesOf = (steps: WorkflowStep[]): ValidationIssue[] => {
  const result = buildWorkflowGraph(steps);
  if (!('issues' in result)) throw new Error(`expected issues: ${JSON.stringify(result)}`);
  return result.issues;
};

const issue = (fields: Omit<ValidationIssue, 'message'>): ValidationIssue => ({
  ...fields,
  message: expect.any(String),
});

const pipeline = (): WorkflowStep[] => [
  step('topic', 'TextEntry', { config: { text: 'otters', apiInputKey: 'topic' } }),
  step('prompt', 'PromptBuilder', { config: { template: 'Write about {{topic}}' }, inputs: ['topic'] }),
  step('answer', 'LlmWorker', { config: { maxTokens: 200 }, inputs: ['prompt'] }),
  step('console', 'TextConsole', { label: 'Result', inputs: ['answer'] }),
];

describe('buildWorkflowGraph: a valid workflow', () => {
  it('builds one node per step and one edge per input, with the first handles by default', () => {
    const canvas = canvasOf(pipeline());

    expect(canvas.nodes.map(({ id, type, label, config }) => ({ id, type, label, config }))).toEqual([
      { id: 'topic', type: 'TextEntry', label: 'Text entry', config: { text: 'otters', apiInputKey: 'topic' } },
      { id: 'prompt', type: 'PromptBuilder', label: 'Prompt builder', config: { template: 'Write about {{topic}}' } },
      { id: 'answer', type: 'LlmWorker', label: 'LLM worker', config: { maxTokens: 200 } },
      { id: 'console', type: 'TextConsole', label: 'Result', config: {} },
    ]);
    expect(canvas.edges).toEqual([
      { id: 'prompt.inputs[0]', source: 'topic', target: 'prompt', sourceHandle: 'text', targetHandle: 'values' },
      { id: 'answer.inputs[0]', source: 'prompt', target: 'answer', sourceHandle: 'prompt', targetHandle: 'prompt' },
      { id: 'console.inputs[0]', source: 'answer', target: 'console', sourceHandle: 'text', targetHandle: 'text' },
    ]);
    expect(canvas.nodes.map((n) => n.position)).toEqual([
      { x: 0, y: 0 },
      { x: columnWidth, y: 0 },
      { x: 2 * columnWidth, y: 0 },
      { x: 3 * columnWidth, y: 0 },
    ]);
  });

  it('connects the named handles of an input object', () => {
    const canvas = canvasOf([
      step('flag', 'TextEntry'),
      step('switch', 'ConditionalSwitch', { config: { operator: 'truthy' }, inputs: ['flag'] }),
      step('words', 'TextEntry'),
      step('ref', 'ImageLoader'),
      step('image', 'ImageGen', {
        inputs: [
          { from: 'switch', sourceHandle: 'false', targetHandle: 'prompt' },
          { from: 'ref', targetHandle: 'reference' },
        ],
      }),
    ]);
    expect(canvas.edges.filter((e) => e.target === 'image')).toEqual([
      { id: 'image.inputs[0]', source: 'switch', target: 'image', sourceHandle: 'false', targetHandle: 'prompt' },
      { id: 'image.inputs[1]', source: 'ref', target: 'image', sourceHandle: 'image', targetHandle: 'reference' },
    ]);
  });

  it('accepts the documented coercions: a number into text, an image into a file delivery', () => {
    const canvas = canvasOf([
      step('sum', 'MathOperator', { config: { expression: '1 + 2' } }),
      step('show', 'TextConsole', { inputs: ['sum'] }),
      step('img', 'ImageLoader'),
      step('push', 'ObjectUploader', { inputs: ['img'] }),
    ]);
    expect(canvas.edges).toHaveLength(2);
  });

  it('refuses a new step’s unknown config keys, but a stored canvas with one still validates', () => {
    const steps = [step('a', 'TextEntry', { config: { text: 'x', uiColour: 'teal' } })];
    expect(buildWorkflowGraph(steps)).toEqual({
      ok: false,
      issues: [
        {
          code: 'invalid_config',
          key: 'a',
          path: 'config.uiColour',
          message: 'TextEntry has no setting "uiColour"; its settings are "text", "apiInputKey"',
        },
      ],
    });
    const stored = canvasOf([step('a', 'TextEntry', { config: { text: 'x' } })]);
    const node = stored.nodes[0] as (typeof stored.nodes)[number];
    expect(validateCanvas({ ...stored, nodes: [{ ...node, config: { text: 'x', uiColour: 'teal' } }] })).toEqual([]);
  });
});

describe('buildWorkflowGraph: refusals', () => {
  it('answers the first unknown node type in step order, before any other problem', () => {
    const result = buildWorkflowGraph([
      step('a', 'TextEntry'),
      step('a', 'Nope', { inputs: ['ghost'] }),
      step('c', 'AlsoNope'),
    ]);
    expect(result).toEqual({ ok: false, unknownType: 'Nope', didYouMean: undefined });
  });

  it('reports a repeated key as duplicate_key on the repeat', () => {
    expect(issuesOf([step('a', 'TextEntry'), step('a', 'TextEntry')])).toEqual([
      issue({ code: 'duplicate_key', key: 'a', path: 'key' }),
    ]);
  });

  it('reports an input naming no step as unknown_input', () => {
    expect(issuesOf([step('a', 'TextConsole', { inputs: ['ghost'] })])).toEqual([
      issue({ code: 'unknown_input', key: 'a', path: 'inputs[0]' }),
    ]);
  });

  it('reports each step on a cycle, and a step reading from itself', () => {
    const issues = issuesOf([
      step('root', 'TextEntry'),
      step('a', 'PromptBuilder', { inputs: ['root', 'c'] }),
      step('b', 'PromptBuilder', { inputs: ['a'] }),
      step('c', 'PromptBuilder', { inputs: ['b'] }),
      step('self', 'ProcessingStage', { inputs: ['self'] }),
    ]);
    expect(issues).toEqual([
      issue({ code: 'cycle', key: 'a' }),
      issue({ code: 'cycle', key: 'b' }),
      issue({ code: 'cycle', key: 'c' }),
      issue({ code: 'cycle', key: 'self' }),
    ]);
    expect(issues[0]?.message).toBe('Step "a" is on a cycle with "b", "c"');
    expect(issues[3]?.message).toBe('Step "self" reads from itself');
  });

  it('reports a source or target handle the node does not have as unknown_handle', () => {
    expect(
      issuesOf([
        step('t', 'TextEntry'),
        step('a', 'TextConsole', { inputs: [{ from: 't', sourceHandle: 'words' }] }),
        step('b', 'TextConsole', { inputs: [{ from: 't', targetHandle: 'body' }] }),
        step('c', 'TextEntry', { inputs: ['t'] }),
      ]),
    ).toEqual([
      issue({ code: 'unknown_handle', key: 'a', handle: 'words', path: 'inputs[0].sourceHandle' }),
      issue({ code: 'unknown_handle', key: 'b', handle: 'body', path: 'inputs[0].targetHandle' }),
      // The connection reaches no input, so `text` is still unconnected.
      issue({ code: 'missing_required_input', key: 'b', handle: 'text' }),
      // TextEntry has no inputs at all, so the default handle is missing too.
      issue({ code: 'unknown_handle', key: 'c', path: 'inputs[0]' }),
    ]);
  });

  it('reports an output kind the input cannot take as incompatible_kinds', () => {
    expect(issuesOf([step('img', 'ImageLoader'), step('llm', 'LlmWorker', { inputs: ['img'] })])).toEqual([
      issue({ code: 'incompatible_kinds', key: 'llm', handle: 'prompt', path: 'inputs[0]' }),
    ]);
  });

  it('reports a required input with no connection as missing_required_input', () => {
    expect(issuesOf([step('llm', 'LlmWorker'), step('gallery', 'ImageGallery', { inputs: [] })])).toEqual([
      issue({ code: 'missing_required_input', key: 'llm', handle: 'prompt' }),
      issue({ code: 'missing_required_input', key: 'gallery', handle: 'images' }),
    ]);
  });

  it('reports a second connection into a single handle as too_many_connections, once per handle', () => {
    expect(
      issuesOf([
        step('a', 'TextEntry'),
        step('b', 'TextEntry'),
        step('llm', 'LlmWorker', { inputs: ['a', 'b', 'a', { from: 'a', targetHandle: 'context' }] }),
      ]),
    ).toEqual([issue({ code: 'too_many_connections', key: 'llm', handle: 'prompt', path: 'inputs[1]' })]);
  });

  it('reports each config problem as invalid_config with its path', () => {
    expect(
      issuesOf([
        step('img', 'ImageGen', { config: { width: 'big', steps: 0 }, inputs: ['t'] }),
        step('t', 'TextEntry'),
        step('x', 'JsonExtractor', { config: {}, inputs: ['api'] }),
        step('api', 'CustomApiCall', { config: { url: 'https://api.test/', headers: { accept: 1 } } }),
      ]),
    ).toEqual([
      issue({ code: 'invalid_config', key: 'img', path: 'config.width' }),
      issue({ code: 'invalid_config', key: 'img', path: 'config.steps' }),
      issue({ code: 'invalid_config', key: 'x', path: 'config.path' }),
      issue({ code: 'invalid_config', key: 'api', path: 'config.headers.accept' }),
    ]);
  });

  it('reports apiInputKey on a type that takes no run input as api_input_key_not_allowed, naming those that do', () => {
    const issues = issuesOf([
      step('t', 'TextEntry'),
      step('llm', 'LlmWorker', { config: { apiInputKey: 'q' }, inputs: ['t'] }),
    ]);
    expect(issues).toEqual([issue({ code: 'api_input_key_not_allowed', key: 'llm', path: 'config.apiInputKey' })]);
    expect(issues[0]?.message).toBe(
      'apiInputKey is only allowed on TextEntry, FileUploader, JsonLoader, ImageLoader, RigImporter and PromptBuilder steps, not LlmWorker',
    );
    // The loaders that read a file take one.
    const loaders = ['ImageLoader', 'FileUploader', 'RigImporter', 'JsonLoader'] as const;
    const accepted = canvasOf(loaders.map((type) => step(type.toLowerCase(), type, { config: { apiInputKey: type } })));
    expect(apiInputKeys(accepted)).toEqual([...loaders]);
  });

  it('reports a second step with the same apiInputKey as duplicate_api_input_key', () => {
    const issues = issuesOf([
      step('a', 'TextEntry', { config: { apiInputKey: 'topic' } }),
      step('b', 'PromptBuilder', { config: { apiInputKey: 'topic' }, inputs: ['a'] }),
    ]);
    expect(issues).toEqual([issue({ code: 'duplicate_api_input_key', key: 'b', path: 'config.apiInputKey' })]);
    expect(issues[0]?.message).toBe('apiInputKey "topic" is already used by step "a"');
  });

  it('reports an invalid apiInputKey on an accepting type as invalid_config', () => {
    expect(issuesOf([step('a', 'TextEntry', { config: { apiInputKey: '' } })])).toEqual([
      issue({ code: 'invalid_config', key: 'a', path: 'config.apiInputKey' }),
    ]);
  });

  it(`accepts ${maxStepsPerWorkflow} steps and reports too_many_steps for one more`, () => {
    const chain = (n: number) =>
      Array.from({ length: n }, (_, i) =>
        i === 0 ? step('s0', 'TextEntry') : step(`s${i}`, 'PromptBuilder', { inputs: [`s${i - 1}`] }),
      );
    const canvas = canvasOf(chain(maxStepsPerWorkflow));
    expect(canvas.nodes).toHaveLength(500);
    expect(canvas.edges).toHaveLength(499);
    expect(issuesOf(chain(maxStepsPerWorkflow + 1))).toEqual([issue({ code: 'too_many_steps', key: null })]);
  });

  it('reports every problem together, in a stable order', () => {
    const issues = issuesOf([
      step('t', 'TextEntry', { config: { apiInputKey: 'k' } }),
      step('t', 'TextEntry', { config: { apiInputKey: 'k' } }),
      step('img', 'ImageGen', {
        config: { width: 1, apiInputKey: 'x' },
        inputs: ['ghost', { from: 't', sourceHandle: 'nope' }],
      }),
      step('llm', 'LlmWorker', { inputs: ['loader', 't'] }),
      step('loader', 'ImageLoader'),
      step('a', 'ProcessingStage', { inputs: ['b'] }),
      step('b', 'ProcessingStage', { inputs: ['a'] }),
    ]);
    expect(issues).toEqual([
      issue({ code: 'duplicate_key', key: 't', path: 'key' }),
      issue({ code: 'duplicate_api_input_key', key: 't', path: 'config.apiInputKey' }),
      issue({ code: 'invalid_config', key: 'img', path: 'config.width' }),
      issue({ code: 'api_input_key_not_allowed', key: 'img', path: 'config.apiInputKey' }),
      issue({ code: 'unknown_input', key: 'img', path: 'inputs[0]' }),
      issue({ code: 'unknown_handle', key: 'img', handle: 'nope', path: 'inputs[1].sourceHandle' }),
      issue({ code: 'too_many_connections', key: 'img', handle: 'prompt', path: 'inputs[1]' }),
      issue({ code: 'incompatible_kinds', key: 'llm', handle: 'prompt', path: 'inputs[0]' }),
      issue({ code: 'too_many_connections', key: 'llm', handle: 'prompt', path: 'inputs[1]' }),
      issue({ code: 'cycle', key: 'a' }),
      issue({ code: 'cycle', key: 'b' }),
    ]);
  });
});

describe('validateCanvas and graph queries', () => {
  it('finds nothing wrong with a canvas it built', () => {
    expect(validateCanvas(canvasOf(pipeline()))).toEqual([]);
  });

  it('finds problems in a stored canvas changed since', () => {
    const canvas = canvasOf(pipeline());
    const edges: CanvasEdge[] = [
      { ...canvas.edges[0]!, sourceHandle: 'words' },
      { ...canvas.edges[1]!, target: 'gone' },
      canvas.edges[2]!,
    ];
    const nodes = canvas.nodes.map((n) => (n.id === 'prompt' ? { ...n, config: { apiInputKey: 'topic' } } : n));
    nodes.push({ ...nodes[0]!, id: 'odd', type: 'Retired' as 'TextEntry' });
    expect(validateCanvas({ nodes, edges })).toEqual([
      issue({ code: 'duplicate_api_input_key', key: 'prompt', path: 'config.apiInputKey' }),
      issue({ code: 'unknown_handle', key: 'prompt', handle: 'words', path: 'edges[0].sourceHandle' }),
      issue({ code: 'missing_required_input', key: 'answer', handle: 'prompt' }),
      issue({ code: 'invalid_config', key: 'odd', path: 'type' }),
      issue({ code: 'unknown_input', key: 'gone', path: 'edges[1]' }),
    ]);
  });

  it('lists API input keys, roots, terminals and a topological order', () => {
    const canvas = canvasOf([
      ...pipeline(),
      step('style', 'PromptBuilder', { config: { apiInputKey: 'style' } }),
      step('image', 'ImageGen', { inputs: ['style'] }),
      step('answer2', 'LlmWorker', { inputs: ['prompt'] }),
    ]);
    expect(apiInputKeys(canvas)).toEqual(['topic', 'style']);
    expect(apiInputTargets(canvas)).toEqual(
      new Map([
        ['topic', 'topic'],
        ['style', 'style'],
      ]),
    );
    expect(rootNodeIds(canvas)).toEqual(['topic', 'style']);
    expect(terminalNodeIds(canvas)).toEqual(['console', 'image', 'answer2']);
    expect(topologicalOrder(canvas)).toEqual(['topic', 'prompt', 'answer', 'console', 'style', 'image', 'answer2']);
  });

  it('refuses to order a canvas with a cycle', () => {
    const canvas: Canvas = {
      nodes: ['a', 'b'].map((id) => ({ id, type: 'ProcessingStage', label: id, config: {}, position: { x: 0, y: 0 } })),
      edges: [
        { id: '1', source: 'a', target: 'b', sourceHandle: 'out', targetHandle: 'in' },
        { id: '2', source: 'b', target: 'a', sourceHandle: 'out', targetHandle: 'in' },
      ],
    };
    expect(() => topologicalOrder(canvas)).toThrow(/cycle/);
  });
});

describe('layeredLayout', () => {
  it('puts each node one column right of its furthest predecessor', () => {
    const positions = layeredLayout(
      ['a', 'b', 'c'],
      [
        { source: 'a', target: 'b' },
        { source: 'b', target: 'c' },
        { source: 'a', target: 'c' },
      ],
    );
    expect([...positions.values()].map((p) => p.x)).toEqual([0, columnWidth, 2 * columnWidth]);
  });

  it('orders a layer by its predecessors’ rows so parallel chains do not cross', () => {
    const positions = layeredLayout(
      ['a', 'b', 'y', 'x'],
      [
        { source: 'a', target: 'x' },
        { source: 'b', target: 'y' },
      ],
    );
    expect(positions.get('x')).toEqual({ x: columnWidth, y: 0 });
    expect(positions.get('y')).toEqual({ x: columnWidth, y: rowHeight });
  });

  it('is deterministic', () => {
    const edges = [
      { source: 'a', target: 'c' },
      { source: 'b', target: 'c' },
      { source: 'a', target: 'd' },
    ];
    expect(layeredLayout(['a', 'b', 'c', 'd'], edges)).toEqual(layeredLayout(['a', 'b', 'c', 'd'], edges));
  });
});

// ---- Property tests: random valid DAGs built from the whole catalogue, and mutations of them ----

const specs: NodeSpec[] = Object.values(catalogue);

interface Declared {
  source: string;
  target: string;
  sourceHandle: string;
  targetHandle: string;
}

interface RandomWorkflow {
  steps: WorkflowStep[];
  /** One entry per declared input, in step then input order, handles resolved. */
  declared: Declared[];
  apiKeys: string[];
}

/** Per node: which type to try first, and a pool of random choices it consumes in turn. */
const planArbitrary = fc.array(
  fc.record({ type: fc.nat(), choices: fc.array(fc.nat({ max: 1000 }), { minLength: 16, maxLength: 16 }) }),
  // size 'max': lengths spread over the whole range, not fast-check's small default.
  { minLength: 1, maxLength: 60, size: 'max' },
);

/**
 * Turns a plan into a valid workflow: each step is the first type (from `type` on) whose required
 * inputs some earlier step can feed; inputs connect compatible earlier outputs, one per single
 * handle, up to three per multiple one, often from the latest steps (chains) and otherwise from
 * any (fans); the string form is used when both handles are the first.
 */
const buildRandomWorkflow = (plan: { type: number; choices: number[] }[]): RandomWorkflow => {
  const steps: WorkflowStep[] = [];
  const declared: Declared[] = [];
  const apiKeys: string[] = [];
  const outputs: { key: string; spec: NodeSpec }[] = [];
  plan.forEach(({ type, choices }, i) => {
    let at = 0;
    const next = (n: number) => choices[at++ % choices.length]! % n;
    const key = `s${i}`;
    for (let attempt = 0; attempt < specs.length; attempt++) {
      const spec = specs[(type + attempt) % specs.length]!;
      const wiring: { input: WorkflowStepInput | string; declared: Declared }[] = [];
      const placeable = spec.inputs.every((handle, h) => {
        const candidates = outputs.flatMap(({ key: from, spec: source }) =>
          source.outputs.flatMap((output, o) => (canConnect(output.kind, handle.kind) ? [{ from, output, o }] : [])),
        );
        let count = handle.multiple ? next(4) : next(2);
        if (handle.required) count = Math.max(count, 1);
        if (candidates.length === 0) return !handle.required;
        for (let c = 0; c < count; c++) {
          // Half the time one of the latest outputs, so long chains appear beside wide fans.
          const pick =
            next(2) === 0 ? candidates.length - 1 - next(Math.min(3, candidates.length)) : next(candidates.length);
          const { from, output, o } = candidates[pick]!;
          const useString = o === 0 && h === 0 && next(2) === 0;
          const input: WorkflowStepInput = { from };
          if (o !== 0 || next(2) === 0) input.sourceHandle = output.name;
          if (h !== 0 || next(2) === 0) input.targetHandle = handle.name;
          wiring.push({
            input: useString ? from : input,
            declared: { source: from, target: key, sourceHandle: output.name, targetHandle: handle.name },
          });
        }
        return true;
      });
      if (!placeable) continue;
      const config: Record<string, unknown> = { ...spec.minimalConfig };
      if (spec.acceptsApiInputKey && next(2) === 0) {
        config.apiInputKey = `input-${i}`;
        apiKeys.push(`input-${i}`);
      }
      steps.push({ key, type: spec.type, config, inputs: wiring.map((w) => w.input) });
      declared.push(...wiring.map((w) => w.declared));
      outputs.push({ key, spec });
      return;
    }
    throw new Error('no placeable type'); // unreachable: TextEntry needs nothing
  });
  return { steps, declared, apiKeys };
};

const randomWorkflow = planArbitrary.map(buildRandomWorkflow);

describe('buildWorkflowGraph on random workflows (property)', () => {
  it('accepts every valid DAG, edge for edge, laid out without overlap and with every edge pointing right', () => {
    fc.assert(
      fc.property(randomWorkflow, ({ steps, declared, apiKeys }) => {
        const canvas = canvasOf(steps);
        expect(canvas.nodes.map((n) => n.id)).toEqual(steps.map((s) => s.key));
        expect(canvas.edges.map(({ id: _, ...edge }) => edge)).toEqual(declared);
        expect(new Set(canvas.edges.map((e) => e.id)).size).toBe(canvas.edges.length);

        const at = new Map(canvas.nodes.map((n) => [n.id, n.position]));
        expect(new Set(canvas.nodes.map((n) => `${n.position.x},${n.position.y}`)).size).toBe(canvas.nodes.length);
        for (const edge of canvas.edges) expect(at.get(edge.source)!.x).toBeLessThan(at.get(edge.target)!.x);

        expect(validateCanvas(canvas)).toEqual([]);
        expect(apiInputKeys(canvas)).toEqual(apiKeys);
        const rank = new Map(topologicalOrder(canvas).map((id, i) => [id, i]));
        for (const edge of canvas.edges) expect(rank.get(edge.source)!).toBeLessThan(rank.get(edge.target)!);
        // Same input, same canvas.
        expect(canvasOf(steps)).toEqual(canvas);
      }),
      { numRuns: 200 },
    );
  });

  it('refuses a back edge as a cycle naming both ends', () => {
    fc.assert(
      fc.property(randomWorkflow, fc.nat(), ({ steps, declared }, pick) => {
        fc.pre(declared.length > 0);
        const { source, target } = declared[pick % declared.length]!;
        const mutated = steps.map((s) => (s.key === source ? { ...s, inputs: [...(s.inputs ?? []), target] } : s));
        const issues = issuesOf(mutated);
        expect(issues).toContainEqual(issue({ code: 'cycle', key: source }));
        expect(issues).toContainEqual(issue({ code: 'cycle', key: target }));
      }),
      { numRuns: 100 },
    );
  });

  it('refuses an input naming a missing key as unknown_input', () => {
    fc.assert(
      fc.property(randomWorkflow, fc.nat(), ({ steps }, pick) => {
        const j = pick % steps.length;
        const target = steps[j]!;
        const path = `inputs[${target.inputs?.length ?? 0}]`;
        const mutated = steps.map((s, i) => (i === j ? { ...s, inputs: [...(s.inputs ?? []), 'no-such-step'] } : s));
        expect(issuesOf(mutated)).toContainEqual(issue({ code: 'unknown_input', key: target.key, path }));
      }),
      { numRuns: 100 },
    );
  });

  it('refuses a handle the source does not have as unknown_handle', () => {
    fc.assert(
      fc.property(randomWorkflow, fc.nat(), ({ steps }, pick) => {
        fc.pre(steps.length > 1);
        const j = 1 + (pick % (steps.length - 1));
        const target = steps[j]!;
        const path = `inputs[${target.inputs?.length ?? 0}].sourceHandle`;
        const wrong = { from: steps[0]!.key, sourceHandle: 'noSuchHandle' };
        const mutated = steps.map((s, i) => (i === j ? { ...s, inputs: [...(s.inputs ?? []), wrong] } : s));
        expect(issuesOf(mutated)).toContainEqual(
          issue({ code: 'unknown_handle', key: target.key, handle: 'noSuchHandle', path }),
        );
      }),
      { numRuns: 100 },
    );
  });
});
