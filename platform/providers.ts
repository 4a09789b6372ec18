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
}

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
    models: {},
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
    models: {},
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
    models: {},
  },
  {
    key: 'studio-x',
    displayName: 'Studio X',
    level: 'app_only',
    protocol: 'openai-compatible',
    baseUrl: 'https://api.studio-x.example/v1',
    licence: 'Studio X Output Terms',
    licenceUrl: 'https://studio-x.example/legal/output-terms',
    commercialUse: 'provider_terms',
    termsUrl: 'https://studio-x.example/legal/terms',
    models: {},
  },
  {
    key: 'byok-y',
    displayName: 'BYOK Y',
    level: 'byok_only',
    protocol: 'openai-compatible',
    baseUrl: 'https://api.byok-y.example/v1',
    licence: 'Y Model Licence 1.0',
    licenceUrl: 'https://byok-y.example/licence',
    commercialUse: 'yes',
    termsUrl: 'https://byok-y.example/terms',
    models: {
      'y-research-1': {
        licence: 'Y Research Licence',
        licenceUrl: 'https://byok-y.example/research',
        commercialUse: 'no',
      },
    },
  },
  {
    key: 'geo-z',
    displayName: 'Geo Z',
    level: 'region_restricted',
    protocol: 'openai-compatible',
    baseUrl: 'https://api.geo-z.example/v1',
    licence: null,
    licenceUrl: null,
    commercialUse: 'provider_terms',
    termsUrl: 'https://geo-z.example/terms',
    models: {},
  },
  {
    key: 'closed-w',
    displayName: 'Closed W',
    level: 'not_allowed',
    protocol: 'openai-compatible',
    baseUrl: 'https://api.closed-w.example/v1',
    licence: null,
    licenceUrl: null,
    commercialUse: 'no',
    termsUrl: 'https://closed-w.example/terms',
    models: {},
  },
];

/** The built-in offline provider: the stand-in for unconfigured providers on a sandbox stage. */
export const sandboxProviderKey = 'sandbox';

export const providerRegistry: Readonly<Record<string, ProviderEntry>> = Object.freeze(
  Object.fromEntries(entries.map((e) => [e.key, e])),
);

export const providerEntry = (key: string): ProviderEntry | undefined =>
  Object.hasOwn(providerRegistry, key) ? providerRegistry[key] : undefined;

/**
 * The Bedrock models the shipped catalogue defaults to (functions/nodes/catalogue/models.ts): a
 * stage that turns Bedrock on (`-c providers=bedrock`) may invoke these unless `-c bedrockModels`
 * names others. Ids as Bedrock spells them; `us.` ones are cross-Region inference profiles.
 */
export const bedrockDefaultModels = {
  text: 'us.anthropic.claude-3-5-haiku-20241022-v1:0',
  vision: 'us.anthropic.claude-3-5-haiku-20241022-v1:0',
  embedding: 'amazon.titan-embed-text-v2:0',
  image: 'stability.stable-image-core-v1:1',
  diffusion: 'stability.sd3-5-large-v1:0',
  upscale: 'stability.stable-fast-upscale-v1:0',
  removeBackground: 'stability.stable-image-remove-background-v1:0',
  control: 'stability.stable-image-control-structure-v1:0',
} as const;
