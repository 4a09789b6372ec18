/**
 * Executors of the stage, viewer and delivery nodes.
 *
 * Stages and viewers pass their value on (a viewer can end a workflow: its value is the output).
 *
 * Deliveries send what they get elsewhere and answer with a receipt
 * `{ delivered: true, target, status, items }`. ApiPostAction posts to its own URL; the others use
 * the team's connection (`context.connection(key)`: `{ secret, endpoint }`) and fail the step with
 * "needs the team connection …" when the team has none:
 * - ChatNotifier (`chat`): POST `{endpoint}` `{ channel, text }` (an incoming-webhook URL).
 * - ObjectUploader (`object-storage`): PUT each file's bytes to `{endpoint}/{bucket}/{prefix}{name}`.
 * - CodeHostADelivery (`codehost-a`), CodeHostBDelivery (`codehost-b`), VcsCDelivery (`vcs-c`):
 *   POST `{endpoint}/{repository}/commits` `{ branch, message, files: [{ path, contentType, contentBase64 }] }`.
 * - EngineDelivery (`engine`): POST `{endpoint}/projects/{project}/assets` `{ assetPath, files: [{ name, contentType, url }] }`
 *   (the engine pulls the short-lived URLs).
 * Every call goes through the address guard with a deadline and no redirects; the token is sent as
 * `Authorization: Bearer`.
 */
import type { NodeType } from '../../../schemas/workflow-words.ts';
import { isRecord } from '../../is-record.ts';
import {
  allInputs,
  type ExecutorDeps,
  everyInput,
  fail,
  filesIn,
  firstInput,
  httpCall,
  oneOrList,
  readMedia,
  requireConnection,
  toText,
  withFileUrls,
} from './helpers.ts';
import { renderTemplate } from './logic.ts';
import type { NodeExecutor, StepContext, StepOutcome, StoredFile } from './types.ts';

const passThrough =
  (input: string, output: string): NodeExecutor =>
  async (context) => ({ outputs: { [output]: firstInput(context, input) ?? null } });

const stage: NodeExecutor = async (context) => {
  const values = everyInput(context);
  return { outputs: { out: values.length === 0 ? null : oneOrList(values) } };
};

const str = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);

const fileName = (file: StoredFile): string => file.name ?? file.key.split('/').at(-1) ?? 'file';

const joinPath = (...parts: (string | undefined)[]): string =>
  parts
    .filter((p): p is string => Boolean(p))
    .map((p) => p.replace(/^\/+|\/+$/g, ''))
    .filter(Boolean)
    .join('/');

const encodePath = (path: string) => path.split('/').map(encodeURIComponent).join('/');

/** POSTs JSON through the guard; fails the step unless the answer is 2xx. */
const postJson = async (
  context: StepContext,
  deps: ExecutorDeps,
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
) => {
  const response = await httpCall(context, deps, url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  if (response.status < 200 || response.status >= 300) {
    fail(
      context,
      `${url.split('?')[0]} answered ${response.status}${response.status < 400 ? ' (redirects are not followed)' : ''}`,
    );
  }
  return response;
};

const receipt = (target: string, status: number, items: number): StepOutcome => ({
  outputs: { receipt: { delivered: true, target, status, items } },
});

const deliveredFiles = (context: StepContext): StoredFile[] => {
  const files = filesIn(allInputs(context, 'files'));
  return files.length > 0 ? files : fail(context, 'no file arrived');
};

const endpointOf = (context: StepContext, connection: { endpoint?: string }, key: string): string =>
  (connection.endpoint ?? fail(context, `the team connection "${key}" has no endpoint`)).replace(/\/+$/, '');

/** A commit of the files to a repository through a code host connection. */
const repositoryDelivery =
  (deps: ExecutorDeps, key: string): NodeExecutor =>
  async (context) => {
    const connection = await requireConnection(context, key);
    const config = context.node.config;
    const repository = str(config.repository) ?? fail(context, 'config.repository is required');
    let total = 0;
    const files = await Promise.all(
      deliveredFiles(context).map(async (file) => {
        const media = await readMedia(context, file);
        total += media.body.length;
        if (total > deps.maxFileBytes) fail(context, `the files are larger than ${deps.maxFileBytes} bytes together`);
        return {
          path: joinPath(str(config.path), fileName(file)),
          contentType: file.contentType,
          contentBase64: Buffer.from(media.body).toString('base64'),
        };
      }),
    );
    const url = `${endpointOf(context, connection, key)}/${encodePath(repository)}/commits`;
    const response = await postJson(
      context,
      deps,
      url,
      {
        branch: str(config.branch) ?? null,
        message: str(config.commitMessage) ?? `Add ${files.length} file(s) from workflow run ${context.jobId}`,
        files,
      },
      { authorization: `Bearer ${connection.secret}` },
    );
    return receipt(`${key}:${repository}`, response.status, files.length);
  };

export const outputExecutors = (deps: ExecutorDeps) =>
  ({
    InputStage: stage,
    ProcessingStage: stage,
    ExportStage: stage,

    TextConsole: async (context) => ({ outputs: { text: toText(firstInput(context, 'text')) } }),
    JsonInspector: passThrough('json', 'json'),
    AudioPlayer: passThrough('audio', 'audio'),
    ThreeDStudioViewer: passThrough('mesh', 'mesh'),
    ShaderPlayback: async (context) => ({ outputs: { shader: toText(firstInput(context, 'shader')) } }),
    ImageGallery: async (context) => ({ outputs: { images: filesIn(allInputs(context, 'images')) } }),

    ApiPostAction: async (context) => {
      const url = toText(context.node.config.url);
      const headers = isRecord(context.node.config.headers)
        ? Object.fromEntries(Object.entries(context.node.config.headers).map(([k, v]) => [k, toText(v)]))
        : {};
      const payload = await withFileUrls(context, oneOrList(allInputs(context, 'payload')));
      const response = await postJson(context, deps, url, payload, headers);
      return receipt(new URL(url).origin, response.status, allInputs(context, 'payload').length);
    },

    ChatNotifier: async (context) => {
      const connection = await requireConnection(context, 'chat');
      const messages = allInputs(context, 'message');
      const template = str(context.node.config.template);
      const text = template ? renderTemplate(template, messages) : messages.map(toText).join('\n\n');
      const channel = str(context.node.config.channel) ?? null;
      const response = await postJson(
        context,
        deps,
        endpointOf(context, connection, 'chat'),
        { channel, text },
        {
          authorization: `Bearer ${connection.secret}`,
        },
      );
      return receipt(`chat:${channel ?? 'default'}`, response.status, messages.length);
    },

    ObjectUploader: async (context) => {
      const connection = await requireConnection(context, 'object-storage');
      const base = endpointOf(context, connection, 'object-storage');
      const bucket = str(context.node.config.bucket) ?? fail(context, 'config.bucket is required');
      const prefix = str(context.node.config.prefix) ?? '';
      const files = deliveredFiles(context);
      let status = 0;
      for (const file of files) {
        const media = await readMedia(context, file);
        const key = `${prefix}${fileName(file)}`;
        const response = await httpCall(context, deps, `${base}/${encodePath(joinPath(bucket, key))}`, {
          method: 'PUT',
          headers: { authorization: `Bearer ${connection.secret}`, 'content-type': file.contentType },
          body: media.body,
        });
        if (response.status < 200 || response.status >= 300)
          fail(context, `uploading ${key} answered ${response.status}`);
        status = response.status;
      }
      return receipt(`object-storage:${bucket}/${prefix}`, status, files.length);
    },

    CodeHostADelivery: repositoryDelivery(deps, 'codehost-a'),
    CodeHostBDelivery: repositoryDelivery(deps, 'codehost-b'),
    VcsCDelivery: repositoryDelivery(deps, 'vcs-c'),

    EngineDelivery: async (context) => {
      const connection = await requireConnection(context, 'engine');
      const project = str(context.node.config.project) ?? fail(context, 'config.project is required');
      const files = await withFileUrls(context, deliveredFiles(context));
      const url = `${endpointOf(context, connection, 'engine')}/projects/${encodeURIComponent(project)}/assets`;
      const response = await postJson(
        context,
        deps,
        url,
        { assetPath: str(context.node.config.assetPath) ?? null, files },
        { authorization: `Bearer ${connection.secret}` },
      );
      return receipt(`engine:${project}`, response.status, (files as unknown[]).length);
    },
  }) satisfies Partial<Record<NodeType, NodeExecutor>>;
