/**
 * The shape of one catalogue entry (DESIGN section 4: the node catalogue is data) and the small
 * builders the entries share.
 */
import * as v from 'valibot';
import type { UploadContentType } from '../../../schemas/upload-types.ts';
import { type NodeType, stepKeyPattern, stepKeyRule } from '../../../schemas/workflow-words.ts';
import type { ValueKind } from './kinds.ts';
import { draftPrice } from './run-modes.ts';

export const nodeCategories = ['stage', 'resource', 'input', 'logic', 'model', 'output', 'delivery'] as const;
export type NodeCategory = (typeof nodeCategories)[number];

/** A named connection point on a node. */
export interface HandleSpec {
  name: string;
  kind: ValueKind;
  /** Inputs only: the step cannot run without a connection here. */
  required?: boolean;
  /** Inputs only: takes several connections (otherwise at most one). */
  multiple?: boolean;
}

/** The AI model a model step runs by default (a step may name another in `config.provider`/`config.model`). */
export interface ModelSpec {
  provider: string;
  model: string;
  /** The offline sandbox model that stands in for it on a sandbox stage where `provider` is off. */
  sandboxModel: string;
  /** The provider charges per run whatever the settings, so `draft` costs the same as `production`. */
  pricedPerRun: boolean;
}

/** Price of one step, in hundredths of a credit (1 credit = $0.01), per run mode; `preview` is `production`. */
export interface NodePrice {
  production: number;
  draft: number;
}

/**
 * Config schemas are `v.object`: unknown keys pass (the app may store settings of its own) and
 * the canvas keeps the config exactly as given, since only the validation result is used, never
 * the stripped output. `apiInputKey` is an entry only where `acceptsApiInputKey` is set;
 * elsewhere the graph validation refuses it with `api_input_key_not_allowed`.
 */
export type ConfigSchema = v.ObjectSchema<v.ObjectEntries, undefined>;

export interface NodeSpec {
  type: NodeType;
  /** The default label of a step of this type. */
  displayName: string;
  category: NodeCategory;
  /** In order: the first is the one a connection without `targetHandle` uses. */
  inputs: readonly HandleSpec[];
  /** In order: the first is the one a connection without `sourceHandle` uses. Never empty. */
  outputs: readonly HandleSpec[];
  configSchema: ConfigSchema;
  /** The smallest config `configSchema` accepts: `{}` unless a setting is required. */
  minimalConfig: Readonly<Record<string, unknown>>;
  /**
   * Whether a run may replace the step's value by `config.apiInputKey`, and with what: `text` on
   * `TextEntry` and `PromptBuilder` (spec 2.2), the value itself; `{ file }` on the loaders that read
   * a file (our design), a `fileId` or an https URL of one of those content types.
   */
  acceptsApiInputKey: ApiInput;
  /** Null for steps that are not AI model steps. */
  model: ModelSpec | null;
  price: NodePrice;
}

/** What a step's run input is: none, text, or a file of one of these types. */
export type ApiInput = false | 'text' | { readonly file: readonly UploadContentType[] };

/** The content types a step's file input may be, or undefined when its run input is no file. */
export const fileInputTypes = (spec: Pick<NodeSpec, 'acceptsApiInputKey'>): readonly UploadContentType[] | undefined =>
  typeof spec.acceptsApiInputKey === 'object' ? spec.acceptsApiInputKey.file : undefined;

/** `config.apiInputKey`: the `inputs` key of a run request that replaces the step's value; a step key's pattern. */
export const ApiInputKeySchema = v.pipe(
  v.string(),
  v.regex(stepKeyPattern, (issue) => `apiInputKey ${JSON.stringify(issue.input)} is not allowed: ${stepKeyRule}`),
);

export const NonEmptyStringSchema = v.pipe(v.string(), v.nonEmpty());

/** An integer within `[min, max]`. */
export const intBetween = (min: number, max: number) =>
  v.pipe(v.number(), v.integer(), v.minValue(min), v.maxValue(max));

/** A number within `[min, max]`. */
export const numberBetween = (min: number, max: number) => v.pipe(v.number(), v.minValue(min), v.maxValue(max));

/** A string setting with words for the OpenAPI document (`v.metadata` changes nothing it accepts). */
const described = (description: string) => v.pipe(NonEmptyStringSchema, v.metadata({ description }));

/** Settings every model step has: another provider or model than the default. */
export const modelConfigEntries = {
  provider: v.optional(
    described(
      "The provider that runs the step (`bedrock`, `replicate`, `fal`, `openai-compatible`, ...); by default the stage's for its node type.",
    ),
  ),
  model: v.optional(
    described(
      "The model, in the provider's own naming (`owner/name[:version]` on Replicate, the app id on fal); by default the provider's for the node type. A model the service does not know is allowed.",
    ),
  ),
  /**
   * Fields passed to a hosted model as they are, after the step's own (Replicate, fal); only fields
   * that add no work (functions/nodes/providers/model-input.ts, checked by the graph validation).
   */
  modelInput: v.optional(
    v.pipe(
      v.record(v.string(), v.unknown()),
      v.metadata({
        description:
          "Fields passed to the model as they are, after the step's own (Replicate, fal): only fields that add no work (prompt, negative_prompt, seed, guidance_scale, scheduler, temperature, ...). A field that drives cost (width, num_outputs, max_tokens, ...) is refused: set the step's own setting instead.",
      }),
    ),
  ),
};

/** The price of a step that is not a model step: `draft` changes nothing it does, so it costs the same. */
export const flatPrice = (hundredths: number): NodePrice => ({ production: hundredths, draft: hundredths });

/** The price of a model step in both modes (the draft price's rule: functions/nodes/catalogue/run-modes.ts). */
export const modelPrice = (production: number, pricedPerRun: boolean): NodePrice => ({
  production,
  draft: draftPrice(production, pricedPerRun),
});
