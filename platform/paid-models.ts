/**
 * The models a stage pays for on its own provider keys (`-c paidModels`, env `PAID_MODELS`), each
 * with its price: a flat price in hundredths of a credit a step, or a multiplier over the node
 * type's own price. The catalogue's defaults and the stage's pinned `modelDefaults` are on the list
 * without being named, at the node type's price. A closed list runs any other model only on the
 * team's own key; an open one (`open`, dev and local only) runs it on the stage's key at the node
 * type's price. Read by the stack (validated at synth: lib/stages.ts) and by the runtime
 * (functions/nodes/providers/stage.ts), so both take one syntax, parsed here.
 */
import { catalogueDefaults, type ModelDefaults } from './model-defaults.ts';

/** A listed model's price: hundredths of a credit a step, or times the node type's price. */
export type ModelPrice = { hundredths: number } | { multiplier: number };

export interface PaidModels {
  /** Open: a model not listed runs on the stage's key at the node type's price (dev and local only). */
  open: boolean;
  /** `provider:model` → its price; a model named without a price has the node type's (`{ multiplier: 1 }`). */
  prices: Readonly<Record<string, ModelPrice>>;
}

/** The runtime's default with no `PAID_MODELS`: open, as a stage was before lists existed. */
export const openPaidModels: PaidModels = { open: true, prices: {} };

/** The word that opens a list. */
const openWord = 'open';
/** Highest flat price a listed model may have: 10,000 credits a step. */
export const maxListedHundredths = 1_000_000;
/** Highest multiplier a listed model may have. */
export const maxListedMultiplier = 1_000;

const providerPattern = /^[a-z0-9][a-z0-9-]*$/;
/** Model ids as providers spell them: no spaces, commas or `=` (the list's separators). */
const modelPattern = /^[A-Za-z0-9][\w.:/@+-]*$/;

const modelKey = (name: string, text: string): string => {
  const at = text.indexOf(':');
  const provider = at < 0 ? '' : text.slice(0, at);
  const model = at < 0 ? '' : text.slice(at + 1);
  if (!providerPattern.test(provider) || !modelPattern.test(model)) {
    throw new Error(`${name}: a model must be given as provider:model, got ${JSON.stringify(text)}`);
  }
  return `${provider}:${model}`;
};

/** `250` (hundredths), `x1.5` (a multiplier, up to 4 decimals), or nothing (the node type's price). */
const parseModelPrice = (name: string, key: string, value: unknown): ModelPrice => {
  if (value === undefined || value === true || value === '') return { multiplier: 1 };
  const text = typeof value === 'number' ? String(value) : typeof value === 'string' ? value.trim() : '';
  const times = /^x(\d+(?:\.\d{1,4})?)$/.exec(text);
  if (times) {
    const multiplier = Number(times[1]);
    if (multiplier > 0 && multiplier <= maxListedMultiplier) return { multiplier };
  } else if (/^\d+$/.test(text)) {
    const hundredths = Number(text);
    if (hundredths <= maxListedHundredths) return { hundredths };
  }
  throw new Error(
    `${name}: ${key}'s price must be whole hundredths of a credit (0 to ${maxListedHundredths}) or a multiplier ` +
      `(x0.0001 to x${maxListedMultiplier}), got ${JSON.stringify(value)}`,
  );
};

/**
 * `provider:model=price,…` with `open` as an entry to open the list (`open,replicate:owner/name=250`),
 * or an object `{ "provider:model": price, "open": true }` (cdk.json's stage block), or that object
 * as JSON text (the env var). A price is `250` (hundredths), `x1.5`, or left out (the node type's).
 * The model is the provider's own id: the first `:` ends the provider. Unset or empty: `whenUnset`.
 * Throws on anything malformed or a model given twice.
 */
export const parsePaidModels = (value: unknown, name: string, whenUnset: PaidModels): PaidModels => {
  if (value === undefined || value === null || value === '') return whenUnset;
  if (typeof value === 'string' && value.trim().startsWith('{')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(value);
    } catch {
      throw new Error(`${name} is not valid JSON: ${JSON.stringify(value)}`);
    }
    return parsePaidModels(parsed, name, { open: false, prices: {} });
  }
  let pairs: [string, unknown][];
  if (typeof value === 'string') {
    pairs = value
      .split(',')
      .map((part) => part.trim())
      .filter(Boolean)
      .map((part) => {
        // The price follows the last `=`: model ids carry none.
        const at = part.lastIndexOf('=');
        return at < 0 ? [part, undefined] : [part.slice(0, at).trim(), part.slice(at + 1)];
      });
  } else if (typeof value === 'object' && !Array.isArray(value)) {
    pairs = Object.entries(value as Record<string, unknown>);
  } else {
    throw new Error(`${name} must be provider:model=price entries, comma-separated, got ${JSON.stringify(value)}`);
  }
  let open = false;
  const prices: Record<string, ModelPrice> = {};
  for (const [entry, price] of pairs) {
    if (entry === openWord) {
      if (price !== undefined && price !== true && price !== false) {
        throw new Error(`${name}: ${openWord} takes no price, got ${JSON.stringify(price)}`);
      }
      open = price !== false;
      continue;
    }
    const key = modelKey(name, entry);
    if (Object.hasOwn(prices, key)) throw new Error(`${name}: ${key} is given twice`);
    prices[key] = parseModelPrice(name, key, price);
  }
  return { open, prices };
};

/** The list as the env var carries it: JSON of `provider:model` to its price, and `open` when open. */
export const paidModelsText = (paid: PaidModels): string =>
  JSON.stringify({
    ...(paid.open && { [openWord]: true }),
    ...Object.fromEntries(
      Object.entries(paid.prices).map(([key, price]) => [
        key,
        'hundredths' in price ? price.hundredths : `x${price.multiplier}`,
      ]),
    ),
  });

/**
 * A model's entry on the list: its own (`owner/name:version`, else its name `owner/name`, which
 * lists every version of it), else, for a catalogue default or a stage's pinned default, the node
 * type's price. Undefined: not on the list.
 */
export const listedPrice = (
  paid: PaidModels,
  modelDefaults: ModelDefaults | undefined,
  provider: string,
  model: string,
): ModelPrice | undefined => {
  const own = [model, model.split(':')[0] ?? model]
    .map((id) => `${provider}:${id}`)
    .find((key) => Object.hasOwn(paid.prices, key));
  if (own !== undefined) return paid.prices[own];
  const defaults = [...Object.values(catalogueDefaults), ...Object.values(modelDefaults ?? {})];
  return defaults.some((choice) => choice.provider === provider && choice.model === model)
    ? { multiplier: 1 }
    : undefined;
};
