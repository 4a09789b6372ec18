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
import type { NodeType } from '../../../schemas/workflows.ts';
import { isRecord } from '../../is-record.ts';
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
import type { NodeExecutor, StepContext } from './types.ts';

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

export const inputExecutors = (deps: ExecutorDeps) =>
  ({
    TextEntry: async (context) => ({ outputs: { text: context.runInput ?? toText(context.node.config.text ?? '') } }),

    JsonLoader: async (context) => {
      const { data, url } = context.node.config;
      if (context.runInput !== undefined) return { outputs: { json: toJson(context, context.runInput) } };
      if (data === undefined && typeof url === 'string') {
        const response = await httpCall(context, deps, url, { method: 'GET', headers: { accept: 'application/json' } });
        if (response.status !== 200) fail(context, `loading ${url} answered ${response.status}`);
        return { outputs: { json: toJson(context, response.text()) } };
      }
      return { outputs: { json: typeof data === 'string' ? toJson(context, data) : (data ?? null) } };
    },

    ImageLoader: async (context) => {
      const url = str(context.node.config.url) ?? fail(context, 'config.url is required');
      const file = await download(context, deps, url);
      if (!file.contentType.startsWith('image/')) fail(context, `${url} is not an image (${file.contentType})`);
      return { outputs: { image: await store(context, 'image', file, false) } };
    },

    RigImporter: async (context) => {
      const url = str(context.node.config.url) ?? fail(context, 'config.url is required');
      const file = await download(context, deps, url);
      const format = str(context.node.config.format);
      if (file.contentType !== 'model/gltf-binary' && (format === undefined || format === 'glb')) {
        fail(context, `${url} is not a GLB file`);
      }
      return { outputs: { rig: await store(context, 'rig', file, false) } };
    },

    FileUploader: async (context) => {
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
