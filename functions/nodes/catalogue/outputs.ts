/**
 * Viewer nodes: they show a value in the app. Each passes its value on through one output, so it
 * can end a workflow (its value becomes a RunOutput) or sit in the middle of one.
 */
import * as v from 'valibot';
import type { NodeType } from '../../../schemas/workflow-words.ts';
import { flatPrice, type NodeSpec } from './node-spec.ts';

const viewer = {
  category: 'output',
  acceptsApiInputKey: false,
  model: null,
  minimalConfig: {},
  price: flatPrice(1),
} as const;
const TitleConfigSchema = v.object({ title: v.optional(v.string()) });

export const outputNodes = {
  TextConsole: {
    ...viewer,
    type: 'TextConsole',
    displayName: 'Text console',
    inputs: [{ name: 'text', kind: 'text', required: true }],
    outputs: [{ name: 'text', kind: 'text' }],
    configSchema: TitleConfigSchema,
  },
  ImageGallery: {
    ...viewer,
    type: 'ImageGallery',
    displayName: 'Image gallery',
    inputs: [{ name: 'images', kind: 'image', required: true, multiple: true }],
    outputs: [{ name: 'images', kind: 'list' }],
    configSchema: v.object({
      title: v.optional(v.string()),
      columns: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(12))),
    }),
  },
  AudioPlayer: {
    ...viewer,
    type: 'AudioPlayer',
    displayName: 'Audio player',
    inputs: [{ name: 'audio', kind: 'audio', required: true }],
    outputs: [{ name: 'audio', kind: 'audio' }],
    configSchema: v.object({ title: v.optional(v.string()), loop: v.optional(v.boolean()) }),
  },
  JsonInspector: {
    ...viewer,
    type: 'JsonInspector',
    displayName: 'JSON inspector',
    inputs: [{ name: 'json', kind: 'json', required: true }],
    outputs: [{ name: 'json', kind: 'json' }],
    configSchema: TitleConfigSchema,
  },
  ThreeDStudioViewer: {
    ...viewer,
    type: 'ThreeDStudioViewer',
    displayName: '3D studio viewer',
    inputs: [
      { name: 'mesh', kind: 'mesh', required: true },
      { name: 'textures', kind: 'image', multiple: true },
    ],
    outputs: [{ name: 'mesh', kind: 'mesh' }],
    configSchema: v.object({ title: v.optional(v.string()), environment: v.optional(v.string()) }),
  },
  ShaderPlayback: {
    ...viewer,
    type: 'ShaderPlayback',
    displayName: 'Shader playback',
    inputs: [
      { name: 'shader', kind: 'text', required: true },
      { name: 'textures', kind: 'image', multiple: true },
    ],
    outputs: [{ name: 'shader', kind: 'text' }],
    configSchema: v.object({
      title: v.optional(v.string()),
      durationSeconds: v.optional(v.pipe(v.number(), v.minValue(1), v.maxValue(60))),
    }),
  },
} satisfies Partial<Record<NodeType, NodeSpec>>;
