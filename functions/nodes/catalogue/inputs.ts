/**
 * Nodes that bring a value into the workflow: team resources (saved prompts, knowledge bases,
 * services, repositories, storage) and inputs (typed text, files, JSON, images, listeners).
 */
import * as v from 'valibot';
import { uploadContentTypes } from '../../../schemas/upload-types.ts';
import type { NodeType } from '../../../schemas/workflow-words.ts';
import { type ApiInput, ApiInputKeySchema, flatPrice, intBetween, type NodeSpec } from './node-spec.ts';

const notAModel = { acceptsApiInputKey: false, model: null } as const;
const UrlSchema = v.pipe(v.string(), v.url());

/**
 * The loaders a run may hand a file (`config.apiInputKey`: a `fileId` or an https URL), each with
 * the content types it reads: the one place that says which. Another type is refused at the start.
 */
const fileInput = {
  ImageLoader: { file: ['image/png', 'image/jpeg', 'image/webp', 'image/gif'] },
  FileUploader: { file: uploadContentTypes },
  RigImporter: { file: ['model/gltf-binary', 'model/gltf+json', 'model/fbx', 'model/obj'] },
  JsonLoader: { file: ['application/json'] },
} as const satisfies Partial<Record<NodeType, ApiInput>>;

export const resourceNodes = {
  Prompt: {
    type: 'Prompt',
    displayName: 'Prompt',
    category: 'resource',
    inputs: [],
    outputs: [{ name: 'prompt', kind: 'text' }],
    configSchema: v.object({ promptId: v.optional(v.string()), text: v.optional(v.string()) }),
    minimalConfig: {},
    ...notAModel,
    price: flatPrice(1),
  },
  Knowledgebase: {
    type: 'Knowledgebase',
    displayName: 'Knowledge base',
    category: 'resource',
    inputs: [{ name: 'query', kind: 'text' }],
    outputs: [{ name: 'documents', kind: 'json' }],
    configSchema: v.object({ knowledgebaseId: v.optional(v.string()), topK: v.optional(intBetween(1, 50)) }),
    minimalConfig: {},
    ...notAModel,
    price: flatPrice(2),
  },
  Service: {
    type: 'Service',
    displayName: 'Service',
    category: 'resource',
    inputs: [{ name: 'request', kind: 'json' }],
    outputs: [{ name: 'response', kind: 'json' }],
    configSchema: v.object({ serviceId: v.optional(v.string()), operation: v.optional(v.string()) }),
    minimalConfig: {},
    ...notAModel,
    price: flatPrice(5),
  },
  CodeHostA: {
    type: 'CodeHostA',
    displayName: 'Code host A',
    category: 'resource',
    inputs: [],
    outputs: [{ name: 'files', kind: 'file' }],
    configSchema: v.object({
      repository: v.optional(v.string()),
      ref: v.optional(v.string()),
      path: v.optional(v.string()),
    }),
    minimalConfig: {},
    ...notAModel,
    price: flatPrice(2),
  },
  CloudStorage: {
    type: 'CloudStorage',
    displayName: 'Cloud storage',
    category: 'resource',
    inputs: [],
    outputs: [{ name: 'file', kind: 'file' }],
    configSchema: v.object({ bucket: v.optional(v.string()), key: v.optional(v.string()) }),
    minimalConfig: {},
    ...notAModel,
    price: flatPrice(2),
  },
} satisfies Partial<Record<NodeType, NodeSpec>>;

export const inputNodes = {
  TextEntry: {
    type: 'TextEntry',
    displayName: 'Text entry',
    category: 'input',
    inputs: [],
    outputs: [{ name: 'text', kind: 'text' }],
    configSchema: v.object({ text: v.optional(v.string()), apiInputKey: v.optional(ApiInputKeySchema) }),
    minimalConfig: {},
    acceptsApiInputKey: 'text',
    model: null,
    price: flatPrice(1),
  },
  FileUploader: {
    type: 'FileUploader',
    displayName: 'File uploader',
    category: 'input',
    inputs: [],
    outputs: [{ name: 'file', kind: 'file' }],
    configSchema: v.object({
      fileId: v.optional(v.string()),
      fileName: v.optional(v.string()),
      mimeType: v.optional(v.string()),
      apiInputKey: v.optional(ApiInputKeySchema),
    }),
    minimalConfig: {},
    ...notAModel,
    acceptsApiInputKey: fileInput.FileUploader,
    price: flatPrice(1),
  },
  JsonLoader: {
    type: 'JsonLoader',
    displayName: 'JSON loader',
    category: 'input',
    inputs: [],
    outputs: [{ name: 'json', kind: 'json' }],
    configSchema: v.object({
      data: v.optional(v.unknown()),
      url: v.optional(UrlSchema),
      apiInputKey: v.optional(ApiInputKeySchema),
    }),
    minimalConfig: {},
    ...notAModel,
    acceptsApiInputKey: fileInput.JsonLoader,
    price: flatPrice(1),
  },
  ImageLoader: {
    type: 'ImageLoader',
    displayName: 'Image loader',
    category: 'input',
    inputs: [],
    outputs: [{ name: 'image', kind: 'image' }],
    configSchema: v.object({ url: v.optional(UrlSchema), apiInputKey: v.optional(ApiInputKeySchema) }),
    minimalConfig: {},
    ...notAModel,
    acceptsApiInputKey: fileInput.ImageLoader,
    price: flatPrice(1),
  },
  WebhookListener: {
    type: 'WebhookListener',
    displayName: 'Webhook listener',
    category: 'input',
    inputs: [],
    outputs: [{ name: 'payload', kind: 'json' }],
    configSchema: v.object({ path: v.optional(v.string()) }),
    minimalConfig: {},
    ...notAModel,
    price: flatPrice(1),
  },
  ObjectBucketWatcher: {
    type: 'ObjectBucketWatcher',
    displayName: 'Object bucket watcher',
    category: 'input',
    inputs: [],
    outputs: [{ name: 'file', kind: 'file' }],
    configSchema: v.object({ bucket: v.optional(v.string()), prefix: v.optional(v.string()) }),
    minimalConfig: {},
    ...notAModel,
    price: flatPrice(1),
  },
  ShaderSnippet: {
    type: 'ShaderSnippet',
    displayName: 'Shader snippet',
    category: 'input',
    inputs: [],
    outputs: [{ name: 'shader', kind: 'text' }],
    configSchema: v.object({
      code: v.optional(v.string()),
      language: v.optional(v.picklist(['glsl', 'hlsl', 'wgsl'])),
    }),
    minimalConfig: {},
    ...notAModel,
    price: flatPrice(1),
  },
  RigImporter: {
    type: 'RigImporter',
    displayName: 'Rig importer',
    category: 'input',
    inputs: [],
    outputs: [{ name: 'rig', kind: 'mesh' }],
    configSchema: v.object({
      url: v.optional(UrlSchema),
      format: v.optional(v.picklist(['glb', 'gltf', 'fbx'])),
      apiInputKey: v.optional(ApiInputKeySchema),
    }),
    minimalConfig: {},
    ...notAModel,
    acceptsApiInputKey: fileInput.RigImporter,
    price: flatPrice(1),
  },
  TextureManifest: {
    type: 'TextureManifest',
    displayName: 'Texture manifest',
    category: 'input',
    inputs: [{ name: 'textures', kind: 'image', multiple: true }],
    outputs: [{ name: 'manifest', kind: 'json' }],
    configSchema: v.object({ textures: v.optional(v.array(v.string())) }),
    minimalConfig: {},
    ...notAModel,
    price: flatPrice(1),
  },
} satisfies Partial<Record<NodeType, NodeSpec>>;
