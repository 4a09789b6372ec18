/**
 * What each model the catalogue knows is, as its provider publishes it: its lifecycle status and
 * end of life, where its id is served, and the page those facts were read from, with the date.
 * Pure data and pure rules, read by the stack (lib/stages.ts: `cdk synth` fails on a default a
 * stage's Region does not serve or that is past its end of life, and warns within
 * `eolWarningDays` of it), by the tests (test/model-facts.test.ts holds these rows and the
 * catalogue equal) and by the smoke run (`judgeLifecycle` on a `GetFoundationModel` answer).
 *
 * A row is refreshed from its source page; the synth warning 90 days ahead of an end of life says
 * when. docs/models.md lists every row with its source.
 */

/**
 * Bedrock's states (`modelLifecycle.status` of GetFoundationModel: `ACTIVE`, `LEGACY`; EOL is
 * past its end of life), and `unpublished` for a provider that publishes no lifecycle for the model.
 */
export const lifecycleStatuses = ['Active', 'Legacy', 'EOL', 'unpublished'] as const;
export type LifecycleStatus = (typeof lifecycleStatuses)[number];

export interface ModelFacts {
  provider: string;
  /** The id as a request names it (a Bedrock inference profile id, a Replicate or fal model). */
  model: string;
  status: LifecycleStatus;
  /** The published end of life (`YYYY-MM-DD`), null while none is published. */
  endOfLife: string | null;
  /**
   * The AWS Regions a Bedrock id can be invoked from (for an inference profile, its source
   * Regions); `any` for a provider outside AWS, whose API is reached the same from every Region.
   */
  servedFrom: readonly string[] | 'any';
  /** The AWS Marketplace product id of a third-party Bedrock model, which first use subscribes to; null when none. */
  marketplaceProductId: string | null;
  /** The pages the facts were read from. */
  sources: readonly string[];
  /** `YYYY-MM-DD` the sources were read. */
  read: string;
  /** What the sources leave open, in a line. */
  note?: string;
}

/** Days before an end of life from which a stage enabling the model is warned at synth. */
export const eolWarningDays = 90;

const read = '2026-12-07';
const usProfileRegions = ['us-east-1', 'us-east-2', 'us-west-2'] as const;

const bedrockLifecycle = 'https://docs.aws.amazon.com/bedrock/latest/userguide/model-lifecycle.html';
const bedrockProfiles = 'https://docs.aws.amazon.com/bedrock/latest/userguide/inference-profiles-support.html';
const stabilityServices = 'https://docs.aws.amazon.com/bedrock/latest/userguide/stable-image-services.html';
const stabilityCards = 'https://docs.aws.amazon.com/bedrock/latest/userguide/model-cards-stability-ai.html';

/** A Stability AI Image Service through its US cross-Region inference profile. */
const stabilityService = (model: string): ModelFacts => ({
  provider: 'bedrock',
  model,
  status: 'Active',
  endOfLife: null,
  servedFrom: usProfileRegions,
  marketplaceProductId: null,
  sources: [bedrockProfiles, stabilityCards, stabilityServices],
  read,
  note: 'Subscribing to one Image Service enrols the account in all thirteen; the product id is not on the pages read.',
});

/** A model behind a job provider's own API, which publishes no lifecycle or end of life for it. */
const unpublished = (provider: 'fal' | 'replicate', model: string, page: string): ModelFacts => ({
  provider,
  model,
  status: 'unpublished',
  endOfLife: null,
  servedFrom: 'any',
  marketplaceProductId: null,
  sources: [page],
  read,
  note: `${provider} publishes no lifecycle status or end of life for this model; the smoke run's call is the check.`,
});

/** Every model the catalogue or the registry names, and the models stages are known to pin. */
export const modelFacts: readonly ModelFacts[] = [
  {
    provider: 'bedrock',
    model: 'us.anthropic.claude-haiku-5-5',
    status: 'Active',
    endOfLife: null,
    servedFrom: usProfileRegions,
    marketplaceProductId: 'prod-6cyn7tgqazjhu',
    sources: [
      'https://docs.aws.amazon.com/bedrock/latest/userguide/model-card-anthropic-claude-haiku-5-5.html',
      'https://platform.claude.com/docs/en/models/haiku-5-5/migration-guide',
    ],
    read,
    note:
      'Launched 2026-10-07, end of life no sooner than 2027-10-07 (6-month Legacy period). Takes no ' +
      'temperature; answers may carry thinking blocks before the text.',
  },
  {
    provider: 'bedrock',
    model: 'us.anthropic.claude-3-5-haiku-20241022-v1:0',
    status: 'Legacy',
    endOfLife: '2026-06-19',
    servedFrom: usProfileRegions,
    marketplaceProductId: 'prod-5oba7y7jpji56',
    sources: ['https://docs.aws.amazon.com/bedrock/latest/userguide/model-card-anthropic-claude-3-5-haiku.html'],
    read,
    note: 'The catalogue default until 2026-12-07: Legacy, end of life 2026-06-19; kept so a stage still pinning it fails synth.',
  },
  {
    provider: 'bedrock',
    model: 'amazon.titan-embed-text-v2:0',
    status: 'Active',
    endOfLife: null,
    servedFrom: ['us-east-1', 'us-east-2', 'us-west-2'],
    marketplaceProductId: null,
    sources: [bedrockLifecycle],
    read,
    note: 'Amazon model: no Marketplace subscription. Only the US Regions are recorded; others may serve it too.',
  },
  {
    provider: 'bedrock',
    model: 'stability.stable-image-core-v1:1',
    status: 'Active',
    endOfLife: null,
    servedFrom: ['us-west-2'],
    marketplaceProductId: null,
    sources: [bedrockProfiles, stabilityCards],
    read,
    note: 'In-Region id, launched in us-west-2; the inference-profile page lists no US profile for it.',
  },
  {
    provider: 'bedrock',
    model: 'stability.sd3-5-large-v1:0',
    status: 'Active',
    endOfLife: null,
    servedFrom: ['us-west-2'],
    marketplaceProductId: null,
    sources: [bedrockProfiles, stabilityCards],
    read,
    note: 'In-Region id, launched in us-west-2; the inference-profile page lists no US profile for it.',
  },
  stabilityService('us.stability.stable-fast-upscale-v1:0'),
  stabilityService('us.stability.stable-image-remove-background-v1:0'),
  stabilityService('us.stability.stable-image-control-structure-v1:0'),
  stabilityService('us.stability.stable-image-control-sketch-v1:0'),
  unpublished('fal', 'fal-ai/stable-audio', 'https://fal.ai/models/fal-ai/stable-audio'),
  unpublished('fal', 'fal-ai/trellis', 'https://fal.ai/models/fal-ai/trellis'),
  unpublished(
    'fal',
    'fal-ai/image-preprocessors/depth-anything/v2',
    'https://fal.ai/models/fal-ai/image-preprocessors/depth-anything/v2',
  ),
  unpublished('fal', 'fal-ai/patina/material/extract', 'https://fal.ai/models/fal-ai/patina/material/extract'),
  unpublished('fal', 'fal-ai/meshy/rigging', 'https://fal.ai/models/fal-ai/meshy/rigging'),
  unpublished('fal', 'fal-ai/flux/schnell', 'https://fal.ai/models/fal-ai/flux/schnell'),
  unpublished('fal', 'fal-ai/birefnet/v2', 'https://fal.ai/models/fal-ai/birefnet/v2'),
  unpublished('fal', 'fal-ai/hunyuan3d/v2', 'https://fal.ai/models/fal-ai/hunyuan3d/v2'),
  unpublished('replicate', 'black-forest-labs/flux-schnell', 'https://replicate.com/black-forest-labs/flux-schnell'),
  unpublished('replicate', 'nightmareai/real-esrgan', 'https://replicate.com/nightmareai/real-esrgan'),
  unpublished('replicate', 'chenxwh/depth-anything-v2', 'https://replicate.com/chenxwh/depth-anything-v2'),
  unpublished('replicate', 'meta/musicgen', 'https://replicate.com/meta/musicgen'),
];

/** A model's facts; a Replicate `owner/name:version` is looked up without its version. */
export const factsOf = (provider: string, model: string): ModelFacts | undefined => {
  const name = provider === 'replicate' ? (model.split(':')[0] ?? model) : model;
  return modelFacts.find((row) => row.provider === provider && row.model === name);
};

export type Verdict = { outcome: 'ok' } | { outcome: 'warn'; reason: string } | { outcome: 'fail'; reason: string };

const dayMs = 86_400_000;
/** Whole days from `now` to the end of `date` (UTC): 0 on the day itself, negative after it. */
const daysUntil = (date: string, now: Date): number =>
  Math.floor((Date.parse(`${date}T23:59:59.999Z`) - now.getTime()) / dayMs);

/**
 * Whether a stage in `region` may run `facts`' model as of `now`: fail when the Region does not
 * serve it or it is past its end of life (or EOL), warn when it is Legacy or within
 * `eolWarningDays` of its end of life. `region` undefined (an environment-agnostic synth) skips
 * the Region.
 */
export const judgeModel = (facts: ModelFacts, region: string | undefined, now: Date): Verdict => {
  const name = `${facts.provider}:${facts.model}`;
  const source = `(${facts.sources[0]}, read ${facts.read})`;
  if (region && facts.servedFrom !== 'any' && !facts.servedFrom.includes(region)) {
    return {
      outcome: 'fail',
      reason: `${name} is not served from ${region}: it is served from ${facts.servedFrom.join(', ')} ${source}`,
    };
  }
  return judgeLifecycle(facts, undefined, now);
};

/**
 * The lifecycle verdict for a model as of `now`: from its recorded facts, and from the status a
 * `GetFoundationModel` answer gives (`modelLifecycle.status`, `ACTIVE` or `LEGACY`) when there is
 * one, which wins over the record when it is worse. Fail: EOL, or past the end of life. Warn:
 * Legacy, within `eolWarningDays` of the end of life, or an answered status the record does not
 * match (the record is out of date). The smoke run calls this with each Bedrock default's answer.
 */
export const judgeLifecycle = (facts: ModelFacts, answeredStatus: string | undefined, now: Date): Verdict => {
  const name = `${facts.provider}:${facts.model}`;
  const source = `(${facts.sources[0]}, read ${facts.read})`;
  const answered = answeredStatus?.toUpperCase();
  if (facts.status === 'EOL' || answered === 'EOL') {
    return { outcome: 'fail', reason: `${name} has reached its end of life${endOf(facts)} ${source}` };
  }
  if (facts.endOfLife) {
    const days = daysUntil(facts.endOfLife, now);
    if (days < 0) return { outcome: 'fail', reason: `${name} is past its end of life${endOf(facts)} ${source}` };
    if (days <= eolWarningDays) {
      return {
        outcome: 'warn',
        reason: `${name} reaches its end of life in ${days} days${endOf(facts)}: choose its successor ${source}`,
      };
    }
  }
  if (facts.status === 'Legacy' || answered === 'LEGACY') {
    return { outcome: 'warn', reason: `${name} is Legacy${endOf(facts)}: new accounts cannot use it ${source}` };
  }
  if (answered !== undefined && answered !== 'ACTIVE') {
    return { outcome: 'warn', reason: `${name} answered lifecycle ${answeredStatus}, not ACTIVE ${source}` };
  }
  return { outcome: 'ok' };
};

const endOf = (facts: ModelFacts) => (facts.endOfLife ? ` (end of life ${facts.endOfLife})` : '');

/** `YYYY-MM-DD` as a date at the start of that day (UTC), or undefined when it is not one. */
export const parseFactsDate = (value: string): Date | undefined => {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value)) return undefined;
  const date = new Date(`${value}T00:00:00.000Z`);
  return Number.isNaN(date.getTime()) || date.toISOString().slice(0, 10) !== value ? undefined : date;
};
