/**
 * What `config.modelInput` may pass to a model. A step is priced by its own settings (`width`,
 * `steps`, `variations`, `maxTokens`, `durationSeconds`, `scale`: functions/domain/model-pricing.ts),
 * and the provider request is built from those same settings; `modelInput` is passed on after
 * them, so a field of it that drives cost would buy work the estimate never priced. The rule:
 *
 * - a field on `safeModelInputFields` (fields that steer a model without adding work) passes, on
 *   any model;
 * - a field that drives cost (the common names of that work, and a model the registry knows its own:
 *   `costFields` in functions/nodes/providers/hosted-models.ts) is refused, naming the step setting
 *   to use instead, or saying the service sets it;
 * - anything else is refused: most hosted models are billed by the time they run, so on a model the
 *   service has not read field by field any other field might multiply work.
 *
 * Refused (not priced from the merged input) because a price that follows `modelInput` would need
 * every model's every field understood, while a refusal needs only the list; and the step's own
 * settings already say everything the price reads. The graph validation applies it when a workflow
 * is created and again when a run starts (the 422 `Workflow validation failed`, `invalid_config` at
 * `config.modelInput.<field>`), and the job executor once more before it submits.
 */
import { hostedModelFields, type PricedSetting } from './hosted-models.ts';

/** Fields that steer a model without adding work to it, whatever the model: passed on any model. */
export const safeModelInputFields = [
  'prompt',
  'negative_prompt',
  'system_prompt',
  'seed',
  'guidance',
  'guidance_scale',
  'cfg_scale',
  'strength',
  'prompt_strength',
  'scheduler',
  'sampler',
  'style',
  'style_preset',
  'output_format',
  'output_quality',
  'temperature',
  'top_p',
  'top_k',
  'presence_penalty',
  'frequency_penalty',
  'repetition_penalty',
  'stop_sequences',
] as const;

const safe: ReadonlySet<string> = new Set(safeModelInputFields);

/** A `modelInput` field refused, and why. */
export interface ModelInputRefusal {
  field: string;
  message: string;
}

const settingWords = (settings: readonly PricedSetting[]): string =>
  settings.map((name) => `config.${name}`).join(' and ');

/**
 * The fields of `modelInput` that may not pass to `model` on `provider` (in the order given), each
 * with its message. `stepSettings`: the settings the step's node type has, so a refusal names one
 * the step can set.
 */
export const modelInputRefusals = (
  provider: string,
  model: string | null,
  modelInput: unknown,
  stepSettings: ReadonlySet<string>,
): ModelInputRefusal[] => {
  if (typeof modelInput !== 'object' || modelInput === null || Array.isArray(modelInput)) return [];
  const fields = hostedModelFields(provider, model ?? '');
  const refusals: ModelInputRefusal[] = [];
  for (const field of Object.keys(modelInput)) {
    const cost = Object.hasOwn(fields.costFields, field) ? fields.costFields[field] : undefined;
    if (cost) {
      const settings = cost.settings.filter((name) => stepSettings.has(name));
      refusals.push({
        field,
        message:
          settings.length > 0
            ? `modelInput.${field} drives cost: set ${settingWords(settings)} instead`
            : `modelInput.${field} drives cost and is set by the service`,
      });
    } else if (!safe.has(field)) {
      refusals.push({
        field,
        message: `modelInput.${field} is not a field modelInput may set; it takes only fields that add no work: ${safeModelInputFields.join(', ')}`,
      });
    }
  }
  return refusals;
};
