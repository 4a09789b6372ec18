/**
 * The provider registry's facts (DESIGN section 4): per provider and model, the licence facts an
 * output ships under (spec 2.3 LicenceModel) and the API integration level (spec 7, the provider
 * 422). Facts are data, stamped onto a step when it runs, so a later change here never rewrites the
 * licence of an output made before it. Read by the runtime's rules
 * (`functions/nodes/providers/registry.ts`) and by the stack (`lib/stages.ts`: which providers a
 * stage may run on its own credentials).
 */

export const integrationLevels = ['api', 'app_only', 'byok_only', 'not_allowed', 'region_restricted'] as const;
/**
 * `api`: runs through the API. `app_only`: through the API only on the team's own key (otherwise
 * from the app). `byok_only`: only on the team's own key. `not_allowed`, `region_restricted`: never
 * through the API.
 */
export type IntegrationLevel = (typeof integrationLevels)[number];

/** `provider_terms`: the provider's terms grant the output; null: not checked. */
export type CommercialUse = 'yes' | 'provider_terms' | 'no' | null;

export interface LicenceFacts {
  licence: string | null;
  licenceUrl: string | null;
  commercialUse: CommercialUse;
  termsUrl: string | null;
}

/** How the service talks to a provider: answered within the call, or a job (`replicate`, `fal`) it waits for without holding a Lambda. */
export type ProviderProtocol = 'sandbox' | 'openai-compatible' | 'bedrock' | 'replicate' | 'fal';

/** The protocols whose work is a job at the provider: submitted, then its end announced by webhook or polled. */
export const jobProtocols = ['replicate', 'fal'] as const;
export type JobProtocol = (typeof jobProtocols)[number];
export const isJobProtocol = (protocol: string): protocol is JobProtocol =>
  (jobProtocols as readonly string[]).includes(protocol);

export interface ProviderEntry extends LicenceFacts {
  key: string;
  displayName: string;
  level: IntegrationLevel;
  protocol: ProviderProtocol;
  /** Default API base for `openai-compatible` providers (a team connection's endpoint wins). */
  baseUrl?: string;
  /** Per-model facts that differ from the provider's. */
  models: Readonly<Record<string, Partial<LicenceFacts>>>;
  /**
   * Models whose licence excludes AWS Regions, by Region prefix (`eu-` is every EU Region and
   * London): on a stage in one of them the model is refused as `region_restricted`.
   */
  excludedRegions?: Readonly<Record<string, readonly string[]>>;
}

/** Whether a model's licence excludes `region` (a stage's AWS Region). */
export const regionExcludes = (entry: ProviderEntry, model: string, region: string | undefined): boolean => {
  if (!region || !entry.excludedRegions) return false;
  const name = model.split(':')[0] ?? model;
  const excluded = Object.hasOwn(entry.excludedRegions, name) ? entry.excludedRegions[name] : undefined;
  return excluded?.some((prefix) => region.startsWith(prefix)) ?? false;
};

/**
 * The Bedrock models the shipped catalogue defaults to (platform/model-defaults.ts
 * `catalogueDefaults`): a stage that turns Bedrock on (`-c providers=bedrock`) may invoke these
 * unless `-c bedrockModels` names others. Ids as Bedrock spells them; `us.` ones are cross-Region
 * inference profiles. Each has its lifecycle and Regions in platform/model-facts.ts.
 */
export const bedrockDefaultModels = {
  text: 'us.anthropic.claude-haiku-5-5',
  vision: 'us.anthropic.claude-haiku-5-5',
  embedding: 'amazon.titan-embed-text-v2:0',
  image: 'stability.stable-image-core-v1:1',
  diffusion: 'stability.sd3-5-large-v1:0',
  upscale: 'us.stability.stable-fast-upscale-v1:0',
  removeBackground: 'us.stability.stable-image-remove-background-v1:0',
  control: 'us.stability.stable-image-control-structure-v1:0',
} as const;

const bedrockModelIds = bedrockDefaultModels;

const entries: readonly ProviderEntry[] = [
  {
    key: 'sandbox',
    displayName: 'Sandbox (built in, offline)',
    level: 'api',
    protocol: 'sandbox',
    licence: 'CC0-1.0',
    licenceUrl: 'https://creativecommons.org/publicdomain/zero/1.0/',
    commercialUse: 'yes',
    termsUrl: null,
    models: {},
  },
  {
    // Any server speaking the chat-completions and image-generation protocol; which one is an
    // operator's choice, so its terms are not known here: outputs are `unchecked`.
    key: 'openai-compatible',
    displayName: 'OpenAI-compatible HTTP API',
    level: 'api',
    protocol: 'openai-compatible',
    licence: null,
    licenceUrl: null,
    commercialUse: null,
    termsUrl: null,
    models: {},
  },
  {
    // Amazon Bedrock in the stage's own account: IAM, no third-party key; each model's terms are
    // AWS's (docs/models.md has each default's facts and sources).
    key: 'bedrock',
    displayName: 'Amazon Bedrock',
    level: 'api',
    protocol: 'bedrock',
    licence: null,
    licenceUrl: null,
    commercialUse: 'provider_terms',
    termsUrl: 'https://aws.amazon.com/service-terms/',
    // Read 2026-12-07 (docs/models.md): third-party models ship under AWS's EULA for them, Amazon's
    // own (Titan, Nova) under the AWS Service Terms.
    models: {
      [bedrockModelIds.text]: {
        licence: 'AWS Third-Party Models EULA',
        licenceUrl: 'https://aws.amazon.com/legal/bedrock/third-party-models/',
        commercialUse: 'provider_terms',
      },
      [bedrockModelIds.embedding]: {
        licence: 'AWS Service Terms',
        licenceUrl: 'https://aws.amazon.com/service-terms/',
      },
      [bedrockModelIds.image]: {
        licence: 'AWS Third-Party Models EULA',
        licenceUrl: 'https://aws.amazon.com/legal/bedrock/third-party-models/',
        commercialUse: 'provider_terms',
      },
      [bedrockModelIds.diffusion]: {
        licence: 'AWS Third-Party Models EULA',
        licenceUrl: 'https://aws.amazon.com/legal/bedrock/third-party-models/',
        commercialUse: 'provider_terms',
      },
      [bedrockModelIds.upscale]: {
        licence: 'AWS Third-Party Models EULA',
        licenceUrl: 'https://aws.amazon.com/legal/bedrock/third-party-models/',
        commercialUse: 'provider_terms',
      },
      [bedrockModelIds.removeBackground]: {
        licence: 'AWS Third-Party Models EULA',
        licenceUrl: 'https://aws.amazon.com/legal/bedrock/third-party-models/',
        commercialUse: 'provider_terms',
      },
      [bedrockModelIds.control]: {
        licence: 'AWS Third-Party Models EULA',
        licenceUrl: 'https://aws.amazon.com/legal/bedrock/third-party-models/',
        commercialUse: 'provider_terms',
      },
    },
  },
  {
    key: 'replicate',
    displayName: 'Replicate',
    level: 'api',
    protocol: 'replicate',
    licence: null,
    licenceUrl: null,
    commercialUse: null,
    termsUrl: 'https://replicate.com/terms',
    // Each model's own licence, from its card (docs/models.md, read 2026-11-26).
    models: {
      'black-forest-labs/flux-schnell': {
        licence: 'Apache-2.0',
        licenceUrl: 'https://github.com/black-forest-labs/flux/blob/main/model_licenses/LICENSE-FLUX1-schnell',
        commercialUse: 'yes',
      },
      'nightmareai/real-esrgan': {
        licence: 'BSD-3-Clause',
        licenceUrl: 'https://github.com/NightmareAI/Real-ESRGAN/blob/master/LICENSE',
        commercialUse: 'yes',
      },
      // The service always sends model_size Small: the larger weights are CC-BY-NC-4.0.
      'chenxwh/depth-anything-v2': {
        licence: 'Apache-2.0',
        licenceUrl: 'https://github.com/DepthAnything/Depth-Anything-V2',
        commercialUse: 'yes',
      },
      'meta/musicgen': {
        licence: 'CC-BY-NC-4.0',
        licenceUrl: 'https://github.com/replicate/cog-musicgen',
        commercialUse: 'no',
      },
    },
  },
  {
    key: 'fal',
    displayName: 'fal',
    level: 'api',
    protocol: 'fal',
    licence: null,
    licenceUrl: null,
    commercialUse: null,
    termsUrl: 'https://fal.ai/terms',
    // Each model's own licence, from its card (docs/models.md, read 2026-11-26); null where the
    // hosted model's weights or terms could not be confirmed (its outputs read `unchecked`).
    models: {
      'fal-ai/flux/schnell': {
        licence: 'Apache-2.0',
        licenceUrl: 'https://github.com/black-forest-labs/flux/blob/main/model_licenses/LICENSE-FLUX1-schnell',
        commercialUse: 'yes',
      },
      'fal-ai/trellis': {
        licence: 'MIT',
        licenceUrl: 'https://github.com/microsoft/TRELLIS/blob/main/LICENSE',
        commercialUse: 'yes',
      },
      'fal-ai/birefnet/v2': {
        licence: 'MIT',
        licenceUrl: 'https://github.com/ZhengPeng7/BiRefNet/blob/main/LICENSE',
        commercialUse: 'yes',
      },
      // Commercial use below US$1M annual revenue; an Enterprise licence from Stability above it.
      'fal-ai/stable-audio': {
        licence: 'Stability AI Community License',
        licenceUrl: 'https://huggingface.co/stabilityai/stable-audio-open-1.0/blob/main/LICENSE.md',
        commercialUse: 'provider_terms',
      },
      // Does not apply in the EU, the UK and South Korea, nor to outputs used there.
      'fal-ai/hunyuan3d/v2': {
        licence: 'Tencent Hunyuan 3D 2.0 Community License',
        licenceUrl: 'https://github.com/Tencent-Hunyuan/Hunyuan3D-2/blob/main/LICENSE',
        commercialUse: 'yes',
      },
    },
    /** Models whose licence excludes some AWS Regions (a stage there refuses them: `region_restricted`). */
    excludedRegions: { 'fal-ai/hunyuan3d/v2': ['eu-', 'ap-northeast-2'] },
  },
];

/** The built-in offline provider: the stand-in for unconfigured providers on a sandbox stage. */
export const sandboxProviderKey = 'sandbox';

/** The shipped registry: real providers only. */
const registry = new Map<string, ProviderEntry>(entries.map((e) => [e.key, e]));

/** The providers the registry holds now (the shipped ones, and any a test registered). */
export const providerRegistry = (): readonly ProviderEntry[] => [...registry.values()];

export const providerEntry = (key: string): ProviderEntry | undefined => registry.get(key);

/**
 * Adds providers to this process's registry: tests define the integration levels and licence facts
 * they exercise (test/support/test-providers.ts), beside the shipped providers, which never change.
 */
export const registerProviders = (extra: readonly ProviderEntry[]) => {
  for (const entry of extra) {
    if (entries.some((shipped) => shipped.key === entry.key)) throw new Error(`${entry.key} is a shipped provider`);
    registry.set(entry.key, entry);
  }
};
