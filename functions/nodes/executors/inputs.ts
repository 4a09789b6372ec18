/**
 * Executors of the input and resource nodes: values typed into the step, JSON, files fetched
 * through the address guard, and team resources reached through the team's connections.
 *
 * Connections (Team, Connections; `context.connection(key)` gives `{ secret, endpoint }`):
 * - CodeHostA (`codehost-a`): GET `{endpoint}/{repository}/{ref}/{path}` with the token, stored as a file.
 * - CloudStorage (`cloud-storage`) and ObjectBucketWatcher (`object-storage`): GET
 *   `{endpoint}/{bucket}/{key or prefix}` from an HTTP object gateway, stored as a file.
 * - Knowledgebase (`knowledgebase`): POST `{endpoint}` `{ knowledgebaseId, query, topK }` → documents.
 * - Service (`service`): POST `{endpoint}/{serviceId}/{operation}` with the request → response.
 * A run without the connection fails that step with "needs the team connection …".
 */
import type { NodeType } from '../../../schemas/workflow-words.ts';
import { isRecord } from '../../is-record.ts';
import { fileInputTypes } from '../catalogue/node-spec.ts';
import { sniffFetched } from '../media/file-sniff.ts';
import {
  allInputs,
  download,
  type ExecutorDeps,
  fail,
  firstInput,
  httpCall,
  requireConnection,
  responseValue,
  store,
  toJson,
  toText,
} from './helpers.ts';
import type { NodeExecutor, StepContext, StoredFile } from './types.ts';

const str = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);

const joinUrl = (base: string, ...parts: string[]): string =>
  [base.replace(/\/+$/, ''), ...parts.filter(Boolean).map((p) => p.split('/').map(encodeURIComponent).join('/'))].join(
    '/',
  );

const auth = (secret: string) => ({ authorization: `Bearer ${secret}` });

const endpointOf = (context: StepContext, connection: { endpoint?: string }, key: string): string =>
  connection.endpoint ?? fail(context, `the team connection "${key}" has no endpoint`);

const fetchConnectedFile = async (
  context: StepContext,
  deps: ExecutorDeps,
  key: string,
  parts: string[],
  handle: string,
) => {
  const connection = await requireConnection(context, key);
  const url = joinUrl(endpointOf(context, connection, key), ...parts);
  const file = await download(context, deps, url, auth(connection.secret));
  const name =
    parts
      .at(-1)
      ?.split('/')
      .at(-1)
      ?.replace(/\.[^.]*$/, '') || handle;
  return { outputs: { [handle]: await store(context, name, file, false) } };
};

/**
 * The bytes a URL input names, fetched once through the address guard (at most `maxBytes`) and
 * checked as an upload is against the types the step reads; the step fails on anything else.
 */
const fetchRunInput = async (context: StepContext, deps: ExecutorDeps, url: string, maxBytes: number) => {
  const types = fileInputTypes(context.spec) ?? [];
  const response = await httpCall(context, deps, url, { method: 'GET' }, { maxBytes });
  if (response.status !== 200) fail(context, `downloading the run's input file answered ${response.status}`);
  const verdict = await sniffFetched(types, response.headers['content-type'], response.body);
  if (!verdict.ok) return fail(context, `the run's input file is not usable: ${verdict.reason}`);
  return { body: response.body, contentType: verdict.contentType };
};

/**
 * The file a run's `inputs` handed this step, or undefined when it was given none: the run's own
 * copy of an upload (made at the start), or a URL's bytes, fetched and checked here and stored
 * with the run's files. Neither is marked as AI-generated: they are the caller's.
 */
const runInputFile = async (
  context: StepContext,
  deps: ExecutorDeps,
  baseName: string,
): Promise<StoredFile | undefined> => {
  if (context.runFile) return context.runFile;
  if (context.runInput === undefined) return undefined;
  // A fileId the start did not hold reads as no file: the start holds every one it admits.
  if (!/^https?:\/\//i.test(context.runInput)) return fail(context, "the run's input file was not held by the run");
  return store(context, baseName, await fetchRunInput(context, deps, context.runInput, deps.maxFileBytes), false);
};

export const inputExecutors = (deps: ExecutorDeps) =>
  ({
    TextEntry: async (context) => ({ outputs: { text: context.runInput ?? toText(context.node.config.text ?? '') } }),

    JsonLoader: async (context) => {
      const { data, url } = context.node.config;
      if (context.runFile) {
        // Parsed into the step's value, which is stored with the step: read only as much as a JSON answer may be.
        if (context.runFile.bytes > deps.maxResponseBytes) {
          fail(context, `the run's JSON file is larger than ${deps.maxResponseBytes} bytes`);
        }
        const bytes = context.readFile
          ? await context.readFile(context.runFile)
          : fail(context, 'files cannot be read here');
        return { outputs: { json: toJson(context, new TextDecoder().decode(bytes)) } };
      }
      if (context.runInput !== undefined) {
        const file = await fetchRunInput(context, deps, context.runInput, deps.maxResponseBytes);
        return { outputs: { json: toJson(context, new TextDecoder().decode(file.body)) } };
      }
      if (data === undefined && typeof url === 'string') {
        const response = await httpCall(context, deps, url, { method: 'GET', headers: { accept: 'application/json' } });
        if (response.status !== 200) fail(context, `loading ${url} answered ${response.status}`);
        return { outputs: { json: toJson(context, response.text()) } };
      }
      return { outputs: { json: typeof data === 'string' ? toJson(context, data) : (data ?? null) } };
    },

    ImageLoader: async (context) => {
      const given = await runInputFile(context, deps, 'image');
      if (given) return { outputs: { image: given } };
      const url = str(context.node.config.url) ?? fail(context, 'config.url is required');
      // Typed by its bytes among the image types: a server's `image/svg+xml` (script and all) is no image here.
      const file = await download(context, deps, url);
      return { outputs: { image: await store(context, 'image', file, false, 'image') } };
    },

    RigImporter: async (context) => {
      const given = await runInputFile(context, deps, 'rig');
      if (given) return { outputs: { rig: given } };
      const url = str(context.node.config.url) ?? fail(context, 'config.url is required');
      const file = await download(context, deps, url);
      const format = str(context.node.config.format);
      if (file.contentType !== 'model/gltf-binary' && (format === undefined || format === 'glb')) {
        fail(context, `${url} is not a GLB file`);
      }
      return { outputs: { rig: await store(context, 'rig', file, false, 'mesh') } };
    },

    FileUploader: async (context) => {
      const given = await runInputFile(context, deps, 'file');
      if (given) return { outputs: { file: given } };
      const fileId = str(context.node.config.fileId) ?? fail(context, 'no file chosen (config.fileId)');
      const file = context.libraryFile ? await context.libraryFile(fileId) : undefined;
      return { outputs: { file: file ?? fail(context, `no file ${fileId} in the team's library`) } };
    },

    // In a run started through the API nothing calls the hook: its payload is null (the app fills it).
    WebhookListener: async () => ({ outputs: { payload: null } }),

    ShaderSnippet: async (context) => ({ outputs: { shader: toText(context.node.config.code ?? '') } }),

    TextureManifest: async (context) => {
      const names = Array.isArray(context.node.config.textures) ? context.node.config.textures.map(toText) : [];
      const files = allInputs(context, 'textures');
      const count = Math.max(names.length, files.length);
      const textures = Array.from({ length: count }, (_, i) => ({
        name: names[i] ?? `texture-${i + 1}`,
        file: files[i] ?? null,
      }));
      return { outputs: { manifest: { textures } } };
    },

    Prompt: async (context) => {
      const text = str(context.node.config.text);
      if (text !== undefined) return { outputs: { prompt: text } };
      return fail(context, 'saved prompts are not readable from a run; put the prompt in config.text');
    },

    Knowledgebase: async (context) => {
      const connection = await requireConnection(context, 'knowledgebase');
      const response = await httpCall(context, deps, endpointOf(context, connection, 'knowledgebase'), {
        method: 'POST',
        headers: { ...auth(connection.secret), 'content-type': 'application/json' },
        body: JSON.stringify({
          knowledgebaseId: context.node.config.knowledgebaseId ?? null,
          query: toText(firstInput(context, 'query') ?? ''),
          topK: context.node.config.topK ?? 5,
        }),
      });
      if (response.status !== 200) fail(context, `the knowledge base answered ${response.status}`);
      const value = responseValue(response);
      return { outputs: { documents: isRecord(value) && Array.isArray(value.documents) ? value.documents : value } };
    },

    Service: async (context) => {
      const connection = await requireConnection(context, 'service');
      const { serviceId, operation } = context.node.config;
      const url = joinUrl(endpointOf(context, connection, 'service'), toText(serviceId ?? ''), toText(operation ?? ''));
      const response = await httpCall(context, deps, url, {
        method: 'POST',
        headers: { ...auth(connection.secret), 'content-type': 'application/json' },
        body: JSON.stringify(toJson(context, firstInput(context, 'request') ?? null)),
      });
      if (response.status < 200 || response.status >= 300) fail(context, `the service answered ${response.status}`);
      return { outputs: { response: responseValue(response) } };
    },

    CodeHostA: async (context) => {
      const { repository, ref, path } = context.node.config;
      const repo = str(repository) ?? fail(context, 'config.repository is required');
      const file = str(path) ?? fail(context, 'config.path is required');
      return fetchConnectedFile(context, deps, 'codehost-a', [repo, str(ref) ?? 'HEAD', file], 'files');
    },

    CloudStorage: async (context) => {
      const bucket = str(context.node.config.bucket) ?? fail(context, 'config.bucket is required');
      const key = str(context.node.config.key) ?? fail(context, 'config.key is required');
      return fetchConnectedFile(context, deps, 'cloud-storage', [bucket, key], 'file');
    },

    ObjectBucketWatcher: async (context) => {
      const bucket = str(context.node.config.bucket) ?? fail(context, 'config.bucket is required');
      return fetchConnectedFile(
        context,
        deps,
        'object-storage',
        [bucket, str(context.node.config.prefix) ?? ''],
        'file',
      );
    },
  }) satisfies Partial<Record<NodeType, NodeExecutor>>;
