/**
 * The node-type reference, generated from the node catalogue: what each type does and its
 * settings' words (functions/nodes/catalogue/words.ts), its handles, its settings as the OpenAPI
 * document states them (`documentedConfig`: types and bounds from the config schema), its price
 * and its default model. Served by GET /node-types, written to docs/nodes.md (`nodeTypesPage`,
 * `npm run docs:nodes`) and merged into the document's steps (`describeSteps`).
 */
import type { SchemaObject } from 'openapi3-ts/oas31';
import type { ModelNodeType } from '../../platform/model-defaults.ts';
import type { NodeTypeView } from '../../schemas/node-types.ts';
import { documentedConfig } from '../../schemas/openapi.ts';
import { type NodeType, nodeTypes } from '../../schemas/workflow-words.ts';
import { modelFormulaWords } from '../domain/model-pricing.ts';
import { catalogue } from '../nodes/catalogue/index.ts';
import { nodeWords } from '../nodes/catalogue/words.ts';

type Setting = NodeTypeView['settings'][number];

/** A setting's JSON type, in one word. */
const typeOf = (schema: SchemaObject): string => {
  if (typeof schema.type === 'string') return schema.type;
  if (Array.isArray(schema.type)) return schema.type.join(' | ');
  if (schema.enum) {
    const types = new Set(schema.enum.map((value) => (Number.isInteger(value) ? 'integer' : typeof value)));
    return [...types].join(' | ');
  }
  return 'any';
};

const boundKeys = ['enum', 'minimum', 'maximum', 'exclusiveMinimum', 'minLength', 'maxLength', 'format'] as const;

/** The settings of a node type: its config's properties, with the catalogue's words and defaults. */
const configOf = (type: NodeType): SchemaObject => {
  const config = documentedConfig(type, catalogue[type].configSchema);
  const words = nodeWords[type];
  const properties: Record<string, SchemaObject> = {};
  for (const [name, property] of Object.entries(config.properties ?? {}) as [string, SchemaObject][]) {
    const description = words.settings?.[name] ?? property.description;
    const fallback = words.defaults?.[name];
    properties[name] = {
      ...property,
      ...(description !== undefined && { description }),
      ...(fallback !== undefined && { default: fallback }),
    };
  }
  return { ...config, properties };
};

const settingsOf = (config: SchemaObject): Setting[] =>
  Object.entries(config.properties ?? {}).map(([name, value]) => {
    const property = value as SchemaObject;
    const setting: Setting = {
      name,
      type: typeOf(property),
      required: config.required?.includes(name) ?? false,
      description: property.description ?? '',
    };
    if (property.default !== undefined) setting.default = property.default;
    for (const key of boundKeys) {
      if (property[key] !== undefined) Object.assign(setting, { [key]: property[key] });
    }
    return setting;
  });

const flatFormula = 'flat: the same in every mode, whatever the settings';

/** One node type's reference. */
export const nodeTypeReference = (type: NodeType): NodeTypeView => {
  const spec = catalogue[type];
  const input = spec.acceptsApiInputKey;
  const model = spec.model;
  return {
    type,
    name: spec.displayName,
    category: spec.category,
    description: nodeWords[type].does,
    inputs: spec.inputs.map((h) => ({
      name: h.name,
      kind: h.kind,
      required: h.required ?? false,
      multiple: h.multiple ?? false,
    })),
    outputs: spec.outputs.map((h) => ({ name: h.name, kind: h.kind })),
    settings: settingsOf(configOf(type)),
    runInput:
      input === false ? null : input === 'text' ? { kind: 'text' } : { kind: 'file', contentTypes: [...input.file] },
    price: {
      ...spec.price,
      formula: model
        ? `${modelFormulaWords(type as ModelNodeType)}; rate ${spec.price.production}. Draft: ${model.pricedPerRun ? 'the same' : 'half, rounded up'}. Charged for the work done, never above the estimate held at the start`
        : flatFormula,
    },
    model: model
      ? {
          provider: model.provider,
          model: model.model,
          sandboxModel: model.sandboxModel,
          pricedPerRun: model.pricedPerRun,
        }
      : null,
  };
};

let references: NodeTypeView[] | undefined;

/** Every node type's reference, in the catalogue's order; built once per process. */
export const nodeTypeReferences = (): readonly NodeTypeView[] => {
  references ??= nodeTypes.map(nodeTypeReference);
  return references;
};

/** An amount of hundredths of a credit, as the page writes it. */
const credits = (hundredths: number) => `${hundredths} hundredth${hundredths === 1 ? '' : 's'} of a credit`;

const cell = (text: string) => text.replaceAll('|', '\\|').replaceAll('\n', ' ');
const code = (value: unknown) => `\`${typeof value === 'string' ? value : JSON.stringify(value)}\``;

const boundsOf = (setting: Setting): string => {
  const parts: string[] = [];
  if (setting.enum) parts.push(`one of ${setting.enum.map(code).join(', ')}`);
  if (setting.minimum !== undefined) parts.push(`≥ ${setting.minimum}`);
  if (setting.exclusiveMinimum !== undefined) parts.push(`> ${setting.exclusiveMinimum}`);
  if (setting.maximum !== undefined) parts.push(`≤ ${setting.maximum}`);
  if (setting.minLength !== undefined) parts.push(`at least ${setting.minLength} characters`);
  if (setting.maxLength !== undefined) parts.push(`at most ${setting.maxLength} characters`);
  if (setting.format !== undefined) parts.push(setting.format);
  return parts.join(', ');
};

const section = (node: NodeTypeView): string[] => {
  const lines = [`## ${node.type}`, '', `${node.name} (${node.category}). ${node.description}`, ''];
  const handles = (
    title: string,
    list: readonly { name: string; kind: string; required?: boolean; multiple?: boolean }[],
  ) =>
    list.length === 0
      ? [`${title}: none.`, '']
      : [
          `${title}:`,
          '',
          ...list.map(
            (h) =>
              `- \`${h.name}\` (${h.kind}${h.required ? ', required' : ''}${h.multiple ? ', several connections' : ''})`,
          ),
          '',
        ];
  lines.push(...handles('Inputs', node.inputs), ...handles('Outputs', node.outputs));
  if (node.settings.length === 0) lines.push('Settings: none.', '');
  else {
    lines.push(
      'Settings (`config`):',
      '',
      '| setting | type | required | default | bounds | meaning |',
      '| --- | --- | --- | --- | --- | --- |',
      ...node.settings.map(
        (s) =>
          `| \`${s.name}\` | ${s.type} | ${s.required ? 'yes' : 'no'} | ${s.default === undefined ? '' : cell(code(s.default))} | ${cell(boundsOf(s))} | ${cell(s.description)} |`,
      ),
      '',
    );
  }
  if (node.runInput) {
    lines.push(
      node.runInput.kind === 'text'
        ? 'Run input: a text, through `config.apiInputKey`.'
        : `Run input: a file (${(node.runInput.contentTypes ?? []).join(', ')}), through \`config.apiInputKey\`.`,
      '',
    );
  }
  lines.push(
    `Price: ${credits(node.price.production)} a step (\`draft\`: ${node.price.draft}); ${node.price.formula}.`,
    '',
  );
  if (node.model) {
    lines.push(
      `Default model: \`${node.model.model}\` on \`${node.model.provider}\`; offline stand-in \`${node.model.sandboxModel}\`.`,
      '',
    );
  }
  return lines;
};

/** docs/nodes.md: the reference as a page (test/node-types.test.ts fails when the file differs). */
export const nodeTypesPage = (): string =>
  [
    '# Node types',
    '',
    '<!-- Generated from the node catalogue by `npm run docs:nodes`; do not edit by hand. -->',
    '',
    'Every node type a workflow step may have: what it does, its inputs and outputs with the kind of',
    'value each carries, its settings (`config`) with their types, defaults and bounds, its price and,',
    'for a model step, its default model. The same reference is served as `GET /api/v1/node-types`',
    'and `GET /api/v1/node-types/{type}` (no key needed). A connection goes from an output to an input',
    'whose kind it may feed (docs/api.md, "Steps"); a connection without `sourceHandle` or',
    '`targetHandle` uses the first output or input.',
    'Prices are in credits (1 credit = $0.01) per step; a model step is charged for the work it did',
    '(its formula), held at its estimate when the run starts.',
    '',
    ...nodeTypeReferences().flatMap(section),
  ].join('\n');

/**
 * Merges the reference into the document's steps: each `WorkflowStep_<type>` gets what the type
 * does, its price and default model, and each of its settings its words and default.
 */
export const describeSteps = (schemas: Record<string, SchemaObject>, componentOf: (type: NodeType) => string): void => {
  for (const node of nodeTypeReferences()) {
    const step = schemas[componentOf(node.type)];
    if (!step) continue;
    const model = node.model ? ` Default model: \`${node.model.model}\` on \`${node.model.provider}\`.` : '';
    step.description = `${node.name}: ${node.description} Price: ${node.price.production} hundredths of a credit a step (draft ${node.price.draft}).${model} Reference: GET /node-types/${node.type}.`;
    const config = step.properties?.config as SchemaObject | undefined;
    for (const setting of node.settings) {
      const property = config?.properties?.[setting.name] as SchemaObject | undefined;
      if (!property || '$ref' in property) continue;
      if (setting.description !== '') property.description = setting.description;
      if (setting.default !== undefined) property.default = setting.default;
    }
  }
};
