import type { NodeType } from '../../schemas/workflow-words.ts';
import type { ValidationIssue } from '../../schemas/workflows.ts';
import { isRecord } from '../is-record.ts';
import type { Canvas } from '../nodes/catalogue/canvas.ts';

/**
 * The steps that load a value from outside (a file or JSON) and the settings that give it when the
 * run's `inputs` do not: such a step with neither fails once it runs, after the run's credits were
 * held. A run start refuses it first, with nothing held.
 */
export const loaderValueSettings: Partial<Record<NodeType, readonly string[]>> = {
  ImageLoader: ['url'],
  RigImporter: ['url'],
  JsonLoader: ['data', 'url'],
  FileUploader: ['fileId'],
};

const given = (value: unknown): boolean => value !== undefined && value !== null && value !== '';

const listed = (names: readonly string[]): string => names.map((n) => `config.${n}`).join(' or ');

/**
 * One issue per loader step of `canvas` that `inputs` (a run's, by `config.apiInputKey`) and its
 * settings leave without a value: naming the run input it waits for, or the settings to set.
 */
export const loadersWithoutValue = (canvas: Canvas, inputs: Readonly<Record<string, string>>): ValidationIssue[] =>
  canvas.nodes.flatMap((node): ValidationIssue[] => {
    const settings = loaderValueSettings[node.type];
    if (!settings) return [];
    const config = isRecord(node.config) ? node.config : {};
    if (settings.some((name) => given(config[name]))) return [];
    const inputKey = typeof config.apiInputKey === 'string' ? config.apiInputKey : undefined;
    if (inputKey !== undefined && Object.hasOwn(inputs, inputKey)) return [];
    if (inputKey !== undefined) {
      return [
        {
          code: 'missing_required_input',
          key: node.id,
          path: 'config.apiInputKey',
          message: `${node.type} step "${node.id}" has nothing to load: give the run input "${inputKey}" (inputs.${inputKey}), or set ${listed(settings)}`,
        },
      ];
    }
    return [
      {
        code: 'invalid_config',
        key: node.id,
        path: `config.${settings[0]}`,
        message: `${node.type} step "${node.id}" has nothing to load: set ${listed(settings)}, or config.apiInputKey for a run to give it`,
      },
    ];
  });
