/**
 * Delivery nodes: they send what they receive somewhere outside the service and answer with a
 * receipt (where it went, status), so they can end a workflow.
 */
import * as v from 'valibot';
import type { NodeType } from '../../../schemas/workflow-words.ts';
import { flatPrice, type NodeSpec, NonEmptyStringSchema } from './node-spec.ts';

const delivery = { category: 'delivery', acceptsApiInputKey: false, model: null, price: flatPrice(5) } as const;
const receipt = [{ name: 'receipt', kind: 'json' }] as const;
const files = [{ name: 'files', kind: 'file', required: true, multiple: true }] as const;

/** A push to a repository: files are committed to `branch` (default the repository's) under `path`. */
const RepositoryConfigSchema = v.object({
  repository: NonEmptyStringSchema,
  branch: v.optional(v.string()),
  path: v.optional(v.string()),
  commitMessage: v.optional(v.string()),
});

export const deliveryNodes = {
  ApiPostAction: {
    ...delivery,
    type: 'ApiPostAction',
    displayName: 'API POST action',
    inputs: [{ name: 'payload', kind: 'any', required: true, multiple: true }],
    outputs: receipt,
    configSchema: v.object({ url: v.pipe(v.string(), v.url()), headers: v.optional(v.record(v.string(), v.string())) }),
    minimalConfig: { url: 'https://example.com/hook' },
  },
  ObjectUploader: {
    ...delivery,
    type: 'ObjectUploader',
    displayName: 'Object uploader',
    inputs: files,
    outputs: receipt,
    configSchema: v.object({ bucket: v.optional(v.string()), prefix: v.optional(v.string()) }),
    minimalConfig: {},
  },
  ChatNotifier: {
    ...delivery,
    type: 'ChatNotifier',
    displayName: 'Chat notifier',
    inputs: [{ name: 'message', kind: 'any', required: true, multiple: true }],
    outputs: receipt,
    configSchema: v.object({ channel: v.optional(v.string()), template: v.optional(v.string()) }),
    minimalConfig: {},
  },
  CodeHostADelivery: {
    ...delivery,
    type: 'CodeHostADelivery',
    displayName: 'Code host A delivery',
    inputs: files,
    outputs: receipt,
    configSchema: RepositoryConfigSchema,
    minimalConfig: { repository: 'team/assets' },
  },
  CodeHostBDelivery: {
    ...delivery,
    type: 'CodeHostBDelivery',
    displayName: 'Code host B delivery',
    inputs: files,
    outputs: receipt,
    configSchema: RepositoryConfigSchema,
    minimalConfig: { repository: 'team/assets' },
  },
  VcsCDelivery: {
    ...delivery,
    type: 'VcsCDelivery',
    displayName: 'VCS C delivery',
    inputs: files,
    outputs: receipt,
    configSchema: RepositoryConfigSchema,
    minimalConfig: { repository: 'team/assets' },
  },
  EngineDelivery: {
    ...delivery,
    type: 'EngineDelivery',
    displayName: 'Engine delivery',
    inputs: files,
    outputs: receipt,
    configSchema: v.object({ project: v.optional(v.string()), assetPath: v.optional(v.string()) }),
    minimalConfig: {},
  },
} satisfies Partial<Record<NodeType, NodeSpec>>;
