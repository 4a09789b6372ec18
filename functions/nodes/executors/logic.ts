/** Executors of the logic nodes: they run for real inside the service. */
import { isDeepStrictEqual } from 'node:util';
import type { NodeType } from '../../../schemas/workflow-words.ts';
import { PythonRunnerError } from '../../clients/lambda.ts';
import { isRecord } from '../../is-record.ts';
import type { PythonAnswer } from '../../python/protocol.ts';
import { glbToMesh, meshToGlb, type TriangleMesh } from '../media/glb.ts';
import { cropImage, decodePng, encodePng, isPng } from '../media/png.ts';
import { ExpressionError, evaluate } from './expression.ts';
import {
  allInputs,
  carriesMark,
  type ExecutorDeps,
  fail,
  firstInput,
  httpCall,
  perFile,
  readMedia,
  responseValue,
  store,
  toJson,
  toNumber,
  toText,
  withFileUrls,
} from './helpers.ts';
import { JsonPathError, selectJsonPath } from './json-path.ts';
import { type NodeExecutor, type StepContext, StepFailedError } from './types.ts';

/** A PythonSandbox step's wall-clock limit when its config sets none. */
const pythonDefaultTimeoutMs = 10_000;

/** `{{name}}`, `{{0}}`, `{{user.name}}`: a placeholder of a PromptBuilder template. */
const placeholder = /\{\{\s*([\w.-]+)\s*\}\}/g;

/**
 * Renders a template over the inputs: `{{0}}`, `{{1}}` are the inputs by position, `{{input}}`
 * all of them joined by blank lines, and any other name a property (dotted paths allowed) of the
 * object inputs, later inputs winning. Unknown names render as empty text.
 */
export const renderTemplate = (template: string, values: readonly unknown[]): string => {
  // No prototype: `{{constructor}}` renders as unknown, and an input's `__proto__` key is an ordinary name.
  const named: Record<string, unknown> = Object.create(null);
  for (const value of values) {
    const object = typeof value === 'string' ? tryParseObject(value) : value;
    if (isRecord(object)) Object.assign(named, object);
  }
  return template.replace(placeholder, (_, name: string) => {
    if (/^\d+$/.test(name)) return toText(values[Number(name)]);
    if (name === 'input') return values.map(toText).join('\n\n');
    let current: unknown = named;
    for (const part of name.split('.'))
      current = isRecord(current) && Object.hasOwn(current, part) ? current[part] : undefined;
    return toText(current);
  });
};

const tryParseObject = (text: string): unknown => {
  if (!text.trimStart().startsWith('{')) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
};

const jsonPath = (context: StepContext, document: unknown, path: string): unknown => {
  try {
    return selectJsonPath(document, path);
  } catch (error) {
    if (error instanceof JsonPathError) return fail(context, error.message);
    throw error;
  }
};

const compare = (context: StepContext, value: unknown): boolean => {
  const { operator, value: expected } = context.node.config;
  const numbers = () => {
    const [a, b] = [toNumber(value), toNumber(expected)];
    if (a === undefined || b === undefined) return fail(context, `${String(operator)} needs two numbers`);
    return [a, b] as const;
  };
  switch (operator) {
    case 'equals':
    case 'notEquals': {
      const [a, b] = [toNumber(value), toNumber(expected)];
      const equal =
        a !== undefined && b !== undefined && typeof value !== 'object' && typeof expected !== 'object'
          ? a === b
          : isDeepStrictEqual(value, expected);
      return operator === 'equals' ? equal : !equal;
    }
    case 'greaterThan': {
      const [a, b] = numbers();
      return a > b;
    }
    case 'lessThan': {
      const [a, b] = numbers();
      return a < b;
    }
    case 'contains':
      if (typeof value === 'string') return value.includes(toText(expected));
      if (Array.isArray(value)) return value.some((item) => isDeepStrictEqual(item, expected));
      if (isRecord(value)) return typeof expected === 'string' && Object.hasOwn(value, expected);
      return false;
    case 'truthy':
      return Boolean(value) && !(Array.isArray(value) && value.length === 0) && value !== 'false' && value !== '0';
    case 'empty':
      return (
        value === null ||
        value === undefined ||
        value === '' ||
        (Array.isArray(value) && value.length === 0) ||
        (isRecord(value) && Object.keys(value).length === 0)
      );
    default:
      return fail(context, `unknown operator ${String(operator)}`);
  }
};

/** Keeps about `ratio` of the triangles, spread evenly, and drops the vertices no triangle uses. */
export const decimateMesh = (mesh: TriangleMesh, ratio: number): TriangleMesh => {
  const triangles = mesh.indices.length / 3;
  const keep = Math.max(1, Math.round(triangles * ratio));
  const kept: number[] = [];
  for (let k = 0; k < keep; k++) {
    const t = Math.floor((k * triangles) / keep);
    kept.push(mesh.indices[t * 3] as number, mesh.indices[t * 3 + 1] as number, mesh.indices[t * 3 + 2] as number);
  }
  const remap = new Map<number, number>();
  const positions: number[] = [];
  const indices = kept.map((old) => {
    let index = remap.get(old);
    if (index === undefined) {
      index = remap.size;
      remap.set(old, index);
      positions.push(...mesh.positions.subarray(old * 3, old * 3 + 3));
    }
    return index;
  });
  return { positions: Float32Array.from(positions), indices: Uint32Array.from(indices) };
};

export const logicExecutors = (deps: ExecutorDeps) =>
  ({
    PromptBuilder: async (context) => {
      const values = allInputs(context, 'values');
      const template =
        context.runInput ??
        (typeof context.node.config.template === 'string' ? context.node.config.template : undefined);
      const prompt = template === undefined ? values.map(toText).join('\n\n') : renderTemplate(template, values);
      return { outputs: { prompt } };
    },

    JsonExtractor: async (context) => {
      const document = toJson(context, firstInput(context, 'json'));
      return { outputs: { value: jsonPath(context, document, toText(context.node.config.path ?? '$')) } };
    },

    VariableMapper: async (context) => {
      const values = allInputs(context, 'values').map((v) => (typeof v === 'string' ? (tryParseObject(v) ?? v) : v));
      const root = values.length === 1 ? values[0] : values;
      const mapping = context.node.config.mapping;
      if (!isRecord(mapping)) return { outputs: { variables: isRecord(root) ? root : { values } } };
      // Named by the config's mapping: no prototype, so no name reaches Object.prototype's.
      const variables: Record<string, unknown> = Object.create(null);
      for (const [name, path] of Object.entries(mapping)) variables[name] = jsonPath(context, root, toText(path));
      return { outputs: { variables } };
    },

    MathOperator: async (context) => {
      const values = allInputs(context, 'values');
      const variables: Record<string, number> = {};
      values.forEach((value, i) => {
        const n = toNumber(value);
        if (n === undefined) fail(context, `input ${i + 1} is not a number`);
        if (i < 26) variables[String.fromCharCode(97 + i)] = n as number;
      });
      let result: number;
      try {
        result = evaluate(toText(context.node.config.expression ?? ''), variables);
      } catch (error) {
        if (error instanceof ExpressionError) return fail(context, error.message);
        throw error;
      }
      if (!Number.isFinite(result)) fail(context, 'the result is not a finite number');
      return { outputs: { result } };
    },

    ConditionalSwitch: async (context) => {
      const value = firstInput(context, 'value');
      // Only the branch taken gets a value: the other handle is left out, so what it feeds is skipped.
      return { outputs: compare(context, value) ? { true: value ?? null } : { false: value ?? null } };
    },

    BatchSplitter: async (context) => {
      const list = toJson(context, firstInput(context, 'list'));
      if (!Array.isArray(list)) return fail(context, 'the input is not a list');
      const max = typeof context.node.config.maxItems === 'number' ? context.node.config.maxItems : list.length;
      return { outputs: { item: list.slice(0, max) } };
    },

    IterationGate: async (context) => {
      const values = allInputs(context, 'items');
      const list = values.length === 1 && Array.isArray(values[0]) ? values[0] : values;
      const max = typeof context.node.config.maxItems === 'number' ? context.node.config.maxItems : list.length;
      return { outputs: { list: list.slice(0, max) } };
    },

    ImageCropper: async (context) => {
      const { x = 0, y = 0, width, height } = context.node.config as Record<string, number | undefined>;
      const image = await perFile(context, firstInput(context, 'image'), async (file, index) => {
        const media = await readMedia(context, file);
        if (!isPng(media.body)) fail(context, 'only PNG images can be cropped');
        const decoded = decodePng(media.body);
        let cropped: ReturnType<typeof cropImage>;
        try {
          cropped = cropImage(decoded, x, y, width ?? decoded.width, height ?? decoded.height);
        } catch (error) {
          return fail(context, (error as Error).message);
        }
        const body = encodePng(cropped);
        return store(
          context,
          index ? `image-${index + 1}` : 'image',
          { body, contentType: 'image/png' },
          carriesMark(file, media.body),
        );
      });
      return { outputs: { image } };
    },

    MeshDecimator: async (context) => {
      const ratio = typeof context.node.config.ratio === 'number' ? context.node.config.ratio : 0.5;
      const mesh = await perFile(context, firstInput(context, 'mesh'), async (file, index) => {
        const media = await readMedia(context, file);
        let decimated: Uint8Array;
        try {
          decimated = meshToGlb(decimateMesh(glbToMesh(media.body), ratio));
        } catch (error) {
          return fail(context, (error as Error).message);
        }
        const name = index ? `mesh-${index + 1}` : 'mesh';
        return store(
          context,
          name,
          { body: decimated, contentType: 'model/gltf-binary' },
          carriesMark(file, media.body),
        );
      });
      return { outputs: { mesh } };
    },

    CustomApiCall: async (context) => {
      const config = context.node.config;
      const url = toText(config.url);
      const method = typeof config.method === 'string' ? config.method : 'GET';
      const headers: Record<string, string> = isRecord(config.headers)
        ? Object.fromEntries(Object.entries(config.headers).map(([k, v]) => [k, toText(v)]))
        : {};
      const input = firstInput(context, 'body');
      const hasBody = method !== 'GET' && input !== undefined;
      if (hasBody && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) {
        headers['content-type'] = 'application/json';
      }
      const response = await httpCall(
        context,
        deps,
        url,
        { method, headers, body: hasBody ? JSON.stringify(await withFileUrls(context, input)) : undefined },
        { timeoutMs: typeof config.timeoutMs === 'number' ? config.timeoutMs : undefined },
      );
      if (response.status >= 300 && response.status < 400) {
        fail(context, `answered ${response.status} (redirects are not followed)`);
      }
      if (response.status >= 400) fail(context, `answered ${response.status}`);
      return { outputs: { response: responseValue(response) } };
    },

    PythonSandbox: async (context) => {
      // The code runs on the PythonRunner function, which holds no grant, never in this process.
      if (!deps.python) return fail(context, 'no Python runner is configured in this function');
      const config = context.node.config;
      const timeoutMs = typeof config.timeoutMs === 'number' ? config.timeoutMs : pythonDefaultTimeoutMs;
      let answer: PythonAnswer;
      try {
        answer = await deps.python(
          { code: toText(config.code), inputs: allInputs(context, 'values'), timeoutMs, teamId: context.teamId },
          context.signal,
        );
      } catch (error) {
        if (error instanceof PythonRunnerError) return fail(context, error.message);
        throw error;
      }
      const logs = { stdout: answer.stdout, stderr: answer.stderr };
      if (!answer.ok) {
        const failed = new StepFailedError(`${context.node.type}: ${answer.message}`);
        failed.logs = logs;
        throw failed;
      }
      return { outputs: { result: answer.result }, logs };
    },
  }) satisfies Partial<Record<NodeType, NodeExecutor>>;
