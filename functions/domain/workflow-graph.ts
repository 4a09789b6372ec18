/**
 * Building and validating the canvas graph of a workflow (spec 4.2; DESIGN section 4).
 *
 * `buildWorkflowGraph` turns the `steps` of Create a workflow into a laid-out canvas, or says why
 * not: the first unknown node type (the spec's 422 `Unknown node type: <type>`), or every problem
 * found (the 422 `Workflow validation failed` with `errors`). `validateCanvas` runs the same checks
 * on a stored canvas before a run. Both report problems in a stable order: `too_many_steps` first,
 * then step by step (its key's pattern, its key's uniqueness, config, inputs, connection counts),
 * then `cycle`.
 */
import * as v from 'valibot';
import type { ModelDefaults } from '../../platform/model-defaults.ts';
import { issueMessage } from '../../schemas/common.ts';
import { nodeTypes, stepKeyPattern, stepKeyRule } from '../../schemas/workflow-words.ts';
import type { ValidationIssue, WorkflowStep } from '../../schemas/workflows.ts';
import { isRecord } from '../is-record.ts';
import type { Canvas, CanvasEdge, CanvasNode } from '../nodes/catalogue/canvas.ts';
import { canConnect, catalogue, getNodeSpec, type HandleSpec, type NodeSpec } from '../nodes/catalogue/index.ts';
import { modelInputRefusals } from '../nodes/providers/model-input.ts';
import { stepProvider } from '../nodes/providers/registry.ts';
import { didYouMean } from './did-you-mean.ts';
import { layeredLayout } from './layout.ts';

/** Most steps one workflow may have (the spec leaves it "not shown"; this is ours). */
export const maxStepsPerWorkflow = 500;

export type BuildWorkflowGraphResult =
  | { ok: true; canvas: Canvas }
  | { ok: false; unknownType: string; didYouMean: string | undefined }
  | { ok: false; issues: ValidationIssue[] };

/** One connection to check, from a step's `inputs` or a canvas edge. */
interface Connection {
  id: string;
  from: string;
  to: string;
  sourceHandle: string | undefined;
  targetHandle: string | undefined;
  /** Where it was written: `inputs[2]` (a step) or `edges[2]` (a canvas). */
  path: string;
}

interface GraphNode {
  id: string;
  type: string;
  config: unknown;
  /** The connections into this node. */
  connections: Connection[];
}

interface Checked {
  issues: ValidationIssue[];
  /** Connections whose both handles exist, with the handles filled in. */
  edges: CanvasEdge[];
}

const list = (handles: readonly HandleSpec[]): string => handles.map((h) => h.name).join(', ') || 'none';

/**
 * The issue of a connection into `key` naming a handle that step `stepId` (of `spec`) does not have:
 * on its `source` side an output of the step it comes from, on its `target` side an input of its own.
 */
const unknownHandle = (
  key: string,
  c: Connection,
  side: 'source' | 'target',
  stepId: string,
  spec: NodeSpec,
): ValidationIssue => {
  const [handle, handles, noun, none] =
    side === 'source'
      ? [c.sourceHandle, spec.outputs, 'output', 'has no outputs']
      : [c.targetHandle, spec.inputs, 'input', 'takes no inputs'];
  return {
    code: 'unknown_handle',
    key,
    ...(handle === undefined ? { path: c.path } : { handle, path: `${c.path}.${side}Handle` }),
    message:
      handles.length === 0
        ? `Step "${stepId}" (${spec.type}) ${none}`
        : `Step "${stepId}" (${spec.type}) has no ${noun} "${handle}"; its ${noun}s: ${list(handles)}`,
  };
};

/** `config.width`, `config.headers.accept`, `config.textures[0]`: where a valibot issue points. */
const configPath = (issue: v.BaseIssue<unknown>): string =>
  (issue.path ?? []).reduce(
    (path, item) => (typeof item.key === 'number' ? `${path}[${item.key}]` : `${path}.${String(item.key)}`),
    'config',
  );

/** The node types a run's `inputs` may reach (`acceptsApiInputKey`), in catalogue order. */
const apiInputTypes = Object.values(catalogue)
  .filter((spec) => spec.acceptsApiInputKey)
  .map((spec) => spec.type);
const apiInputTypesText = `${apiInputTypes.slice(0, -1).join(', ')} and ${apiInputTypes.at(-1)}`;

/**
 * The `modelInput` fields of a model step that may not pass to its model (functions/nodes/providers/model-input.ts),
 * the model as the step resolves it (`modelDefaults`: the stage's, when a run starts).
 */
const checkModelInput = (
  node: GraphNode,
  spec: NodeSpec,
  modelDefaults: ModelDefaults | undefined,
  issues: ValidationIssue[],
): void => {
  if (!isRecord(node.config) || node.config.modelInput === undefined) return;
  const use = stepProvider({ config: node.config }, spec, modelDefaults);
  if (!use) return;
  const settings = new Set(Object.keys(spec.configSchema.entries));
  for (const refusal of modelInputRefusals(use.provider, use.model, node.config.modelInput, settings)) {
    issues.push({
      code: 'invalid_config',
      key: node.id,
      path: `config.modelInput.${refusal.field}`,
      message: refusal.message,
    });
  }
};

/** Checks one node's config against its type: schema, `modelInput`, then the `apiInputKey` rules. */
const checkConfig = (
  node: GraphNode,
  spec: NodeSpec,
  apiInputKeyOwners: Map<string, string>,
  issues: ValidationIssue[],
  modelDefaults: ModelDefaults | undefined,
): void => {
  const parsed = v.safeParse(spec.configSchema, node.config);
  if (!parsed.success) {
    for (const issue of parsed.issues) {
      issues.push({ code: 'invalid_config', key: node.id, path: configPath(issue), message: issueMessage(issue) });
    }
  }
  checkModelInput(node, spec, modelDefaults, issues);
  const apiInputKey = isRecord(node.config) ? node.config.apiInputKey : undefined;
  if (apiInputKey === undefined) return;
  if (!spec.acceptsApiInputKey) {
    issues.push({
      code: 'api_input_key_not_allowed',
      key: node.id,
      path: 'config.apiInputKey',
      message: `apiInputKey is only allowed on ${apiInputTypesText} steps, not ${spec.type}`,
    });
    return;
  }
  if (typeof apiInputKey !== 'string') return; // reported by the schema
  const owner = apiInputKeyOwners.get(apiInputKey);
  if (owner === undefined) {
    apiInputKeyOwners.set(apiInputKey, node.id);
  } else {
    issues.push({
      code: 'duplicate_api_input_key',
      key: node.id,
      path: 'config.apiInputKey',
      message: `apiInputKey "${apiInputKey}" is already used by step "${owner}"`,
    });
  }
};

/**
 * A new step's settings its type does not have: each an `invalid_config` issue at its path, naming
 * the setting and the one it most likely misspells (else the type's settings), so a typo (`widht`)
 * is refused at the start instead of silently running on the default. Only a new workflow's steps
 * are checked: a stored one ran with such a setting ignored, and keeps running so.
 * `apiInputKey` has its own rule (`api_input_key_not_allowed`).
 */
const unknownSettingIssues = (node: GraphNode, spec: NodeSpec): ValidationIssue[] => {
  if (!isRecord(node.config)) return [];
  const known = Object.keys(spec.configSchema.entries);
  return Object.keys(node.config)
    .filter((name) => !Object.hasOwn(spec.configSchema.entries, name) && name !== 'apiInputKey')
    .map((name) => {
      const near = didYouMean(name, known);
      const hint = near
        ? `did you mean "${near}"?`
        : known.length > 0
          ? `its settings are ${known.map((k) => `"${k}"`).join(', ')}`
          : 'it has no settings';
      return {
        code: 'invalid_config',
        key: node.id,
        path: `config.${name}`,
        message: `${spec.type} has no setting "${name}"; ${hint}`,
      };
    });
};

/** Finds the handle a connection names, or the first one when it names none. */
const resolveHandle = (
  handles: readonly HandleSpec[],
  name: string | undefined,
): { ok: true; handle: HandleSpec } | { ok: false } => {
  const handle = name === undefined ? handles[0] : handles.find((h) => h.name === name);
  return handle ? { ok: true, handle } : { ok: false };
};

/**
 * Strongly connected components (Tarjan), iterative so a long chain cannot overflow the stack.
 * Returns, for each node on a cycle, the ids of the cycle's component.
 */
const cycleMembers = (ids: readonly string[], successors: Map<string, string[]>): Map<string, string[]> => {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const members = new Map<string, string[]>();
  const visit = (id: string) => {
    index.set(id, counter);
    low.set(id, counter);
    counter++;
    stack.push(id);
    onStack.add(id);
  };
  for (const root of ids) {
    if (index.has(root)) continue;
    visit(root);
    const work = [{ id: root, next: 0 }];
    while (work.length > 0) {
      const frame = work[work.length - 1]!;
      const out = successors.get(frame.id) ?? [];
      if (frame.next < out.length) {
        const w = out[frame.next++]!;
        if (!index.has(w)) {
          visit(w);
          work.push({ id: w, next: 0 });
        } else if (onStack.has(w)) {
          low.set(frame.id, Math.min(low.get(frame.id)!, index.get(w)!));
        }
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.id, Math.min(low.get(parent.id)!, low.get(frame.id)!));
      if (low.get(frame.id) !== index.get(frame.id)) continue;
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== frame.id);
      const selfLoop = (successors.get(frame.id) ?? []).includes(frame.id);
      if (component.length > 1 || selfLoop) for (const member of component) members.set(member, component);
    }
  }
  return members;
};

/** Checks connections into `node` (typed `spec`, or unknown) and counts them per input handle. */
const checkConnections = (
  node: GraphNode,
  spec: NodeSpec | undefined,
  nodesById: Map<string, GraphNode>,
  checked: Checked,
): void => {
  const { issues } = checked;
  // Per input handle: connections into it, and where the first one too many was written.
  const counts = new Map<string, { count: number; extraPath?: string }>();
  for (const c of node.connections) {
    const source = nodesById.get(c.from);
    const sourceSpec = source && getNodeSpec(source.type);
    let output: HandleSpec | undefined;
    if (!source) {
      issues.push({ code: 'unknown_input', key: node.id, path: c.path, message: `Input "${c.from}" names no step` });
    } else if (sourceSpec) {
      const resolved = resolveHandle(sourceSpec.outputs, c.sourceHandle);
      if (resolved.ok) {
        output = resolved.handle;
      } else {
        issues.push(unknownHandle(node.id, c, 'source', c.from, sourceSpec));
      }
    }
    if (!spec) continue;
    const resolved = resolveHandle(spec.inputs, c.targetHandle);
    if (!resolved.ok) {
      issues.push(unknownHandle(node.id, c, 'target', node.id, spec));
      continue;
    }
    const input = resolved.handle;
    const seen = counts.get(input.name);
    counts.set(input.name, seen ? { count: seen.count + 1, extraPath: seen.extraPath ?? c.path } : { count: 1 });
    if (!output) continue;
    if (!canConnect(output.kind, input.kind)) {
      issues.push({
        code: 'incompatible_kinds',
        key: node.id,
        handle: input.name,
        path: c.path,
        message: `Output "${output.name}" (${output.kind}) of step "${c.from}" cannot feed input "${input.name}" (${input.kind})`,
      });
    }
    checked.edges.push({
      id: c.id,
      source: c.from,
      target: node.id,
      sourceHandle: output.name,
      targetHandle: input.name,
    });
  }
  if (!spec) return;
  for (const input of spec.inputs) {
    const seen = counts.get(input.name);
    if (seen && seen.count > 1 && !input.multiple) {
      issues.push({
        code: 'too_many_connections',
        key: node.id,
        handle: input.name,
        ...(seen.extraPath === undefined ? {} : { path: seen.extraPath }),
        message: `Input "${input.name}" of step "${node.id}" takes one connection; ${seen.count} given`,
      });
    }
    if (!seen && input.required) {
      issues.push({
        code: 'missing_required_input',
        key: node.id,
        handle: input.name,
        message: `Input "${input.name}" of step "${node.id}" (${spec.type}) needs a connection`,
      });
    }
  }
};

/**
 * Every check, shared by a request's steps and a stored canvas. `stray`: canvas edges into no node;
 * `modelDefaults`: the stage's default models, when known (a run start).
 */
const checkGraph = (
  nodes: readonly GraphNode[],
  stray: readonly Connection[],
  modelDefaults?: ModelDefaults,
  refuse: { unknownSettings: boolean } = { unknownSettings: false },
): Checked => {
  const checked: Checked = { issues: [], edges: [] };
  const { issues } = checked;
  if (nodes.length > maxStepsPerWorkflow) {
    issues.push({
      code: 'too_many_steps',
      key: null,
      message: `A workflow has at most ${maxStepsPerWorkflow} steps; ${nodes.length} given`,
    });
  }
  const nodesById = new Map<string, GraphNode>();
  for (const node of nodes) if (!nodesById.has(node.id)) nodesById.set(node.id, node);

  const apiInputKeyOwners = new Map<string, string>();
  for (const node of nodes) {
    if (!stepKeyPattern.test(node.id)) {
      issues.push({
        code: 'invalid_key',
        key: node.id,
        path: 'key',
        message: `Step key ${JSON.stringify(node.id)} is not allowed: ${stepKeyRule}`,
      });
    }
    if (nodesById.get(node.id) !== node) {
      issues.push({ code: 'duplicate_key', key: node.id, path: 'key', message: `Step key "${node.id}" is used twice` });
    }
    const spec = getNodeSpec(node.type);
    if (spec) {
      checkConfig(node, spec, apiInputKeyOwners, issues, modelDefaults);
      if (refuse.unknownSettings) issues.push(...unknownSettingIssues(node, spec));
    } else {
      // Only a stored canvas gets here with an unknown type (a request stops at the first one).
      issues.push({ code: 'invalid_config', key: node.id, path: 'type', message: `Unknown node type: ${node.type}` });
    }
    checkConnections(node, spec, nodesById, checked);
  }
  for (const c of stray) {
    issues.push({ code: 'unknown_input', key: c.to, path: c.path, message: `Edge "${c.id}" leads to no step` });
  }

  // A connection is a dependency even when its handles are wrong, so cycles count it too.
  const successors = new Map<string, string[]>();
  for (const node of nodes) {
    for (const c of node.connections) {
      if (!nodesById.has(c.from)) continue;
      const out = successors.get(c.from);
      if (out) out.push(node.id);
      else successors.set(c.from, [node.id]);
    }
  }
  const ids = [...nodesById.keys()];
  const onCycle = cycleMembers(ids, successors);
  const rank = new Map(ids.map((id, i) => [id, i]));
  for (const id of ids) {
    const component = onCycle.get(id);
    if (!component) continue;
    const others = component.filter((m) => m !== id).sort((a, b) => rank.get(a)! - rank.get(b)!);
    issues.push({
      code: 'cycle',
      key: id,
      message:
        others.length === 0
          ? `Step "${id}" reads from itself`
          : `Step "${id}" is on a cycle with ${others.map((m) => `"${m}"`).join(', ')}`,
    });
  }
  return checked;
};

/**
 * Builds the canvas of Create a workflow's `steps`: one node per step (id = key, label defaulting
 * to the type's display name, config as given), one edge per input, positions from the layered
 * layout. Refuses at the first unknown node type; otherwise reports every problem it finds.
 * Issue `cycle` is reported once for each step on a cycle (so every step involved is named).
 */
export const buildWorkflowGraph = (steps: readonly WorkflowStep[]): BuildWorkflowGraphResult => {
  const specs: NodeSpec[] = [];
  for (const step of steps) {
    const spec = getNodeSpec(step.type);
    if (!spec) return { ok: false, unknownType: step.type, didYouMean: didYouMean(step.type, nodeTypes) };
    specs.push(spec);
  }
  const nodes: GraphNode[] = steps.map((step) => ({
    id: step.key,
    type: step.type,
    config: step.config ?? {},
    connections: (step.inputs ?? []).map((input, i) => {
      const { from, sourceHandle, targetHandle } = typeof input === 'string' ? { from: input } : input;
      return { id: `${step.key}.inputs[${i}]`, from, to: step.key, sourceHandle, targetHandle, path: `inputs[${i}]` };
    }),
  }));
  const { issues, edges } = checkGraph(nodes, [], undefined, { unknownSettings: true });
  if (issues.length > 0) return { ok: false, issues };

  const positions = layeredLayout(
    steps.map((s) => s.key),
    edges,
  );
  const canvasNodes = steps.map(
    (step, i): CanvasNode => ({
      id: step.key,
      type: specs[i]!.type,
      label: step.label ?? specs[i]!.displayName,
      config: { ...step.config },
      position: positions.get(step.key)!,
    }),
  );
  return { ok: true, canvas: { nodes: canvasNodes, edges } };
};

/**
 * Re-validates a stored canvas before a run, with the same checks as `buildWorkflowGraph`; an
 * empty list means it may run. A node of unknown type is reported as `invalid_config` at `type`;
 * an edge's issues carry the path `edges[<index>]` and the key of the node it leads into.
 * `modelDefaults`: the stage's default models, so `modelInput` is checked against the model that runs.
 */
export const validateCanvas = (canvas: Canvas, modelDefaults?: ModelDefaults): ValidationIssue[] => {
  const nodes: GraphNode[] = canvas.nodes.map((node) => ({
    id: node.id,
    type: node.type,
    config: node.config,
    connections: [],
  }));
  const first = new Map<string, GraphNode>();
  for (const node of nodes) if (!first.has(node.id)) first.set(node.id, node);
  const stray: Connection[] = [];
  canvas.edges.forEach((edge, i) => {
    const connection: Connection = {
      id: edge.id,
      from: edge.source,
      to: edge.target,
      sourceHandle: edge.sourceHandle,
      targetHandle: edge.targetHandle,
      path: `edges[${i}]`,
    };
    const target = first.get(edge.target);
    if (target) target.connections.push(connection);
    else stray.push(connection);
  });
  return checkGraph(nodes, stray, modelDefaults).issues;
};

/** The `config.apiInputKey` values a run's `inputs` may use, in node order. */
export const apiInputKeys = (canvas: Canvas): string[] => [...apiInputTargets(canvas).keys()];

/** Each `config.apiInputKey` and the id of the node whose value it replaces (a Map: the keys are the caller's). */
export const apiInputTargets = (canvas: Canvas): Map<string, string> => {
  const targets = new Map<string, string>();
  for (const node of canvas.nodes) {
    const key = node.config.apiInputKey;
    if (typeof key === 'string' && getNodeSpec(node.type)?.acceptsApiInputKey && !targets.has(key)) {
      targets.set(key, node.id);
    }
  }
  return targets;
};
