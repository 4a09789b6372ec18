import { messages } from '../../../schemas/errors.ts';
import type { Canvas, CanvasNode } from '../../domain/workflow-graph.ts';
/**
 * The provider registry (DESIGN section 4): per provider and model, the licence facts an output
 * ships under (spec 2.3 LicenceModel) and the API integration level (spec 7, the provider 422).
 * Facts are data, stamped onto a step when it runs, so a later change here never rewrites the
 * licence of an output made before it.
 */
import { getNodeSpec } from '../catalogue/index.ts';
import type { NodeSpec } from '../catalogue/node-spec.ts';
import type { StageProviders } from './stage.ts';

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

/** How the service talks to a provider. */
export type ProviderProtocol = 'sandbox' | 'openai-compatible';

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

/** Licence facts of a model as the registry has them now; an unknown provider has none (unchecked). */
export const licenceFacts = (provider: string, model: string): LicenceFacts => {
  const entry = providerEntry(provider);
  if (!entry) return { licence: null, licenceUrl: null, commercialUse: null, termsUrl: null };
  const own = Object.hasOwn(entry.models, model) ? entry.models[model] : undefined;
  return {
    licence: own?.licence !== undefined ? own.licence : entry.licence,
    licenceUrl: own?.licenceUrl !== undefined ? own.licenceUrl : entry.licenceUrl,
    commercialUse: own?.commercialUse !== undefined ? own.commercialUse : entry.commercialUse,
    termsUrl: own?.termsUrl !== undefined ? own.termsUrl : entry.termsUrl,
  };
};

/**
 * The provider a model step runs on: `config.provider`, else the catalogue's. The model is
 * `config.model`, else the catalogue's when the provider is the catalogue's, else null (the
 * provider's own default, which the executor names when it runs). Null for steps that are not
 * model steps.
 */
export const stepProvider = (
  node: Pick<CanvasNode, 'config'>,
  spec: Pick<NodeSpec, 'model'>,
): { provider: string; model: string | null } | null => {
  if (!spec.model) return null;
  const configured = typeof node.config.provider === 'string' ? node.config.provider : undefined;
  const provider = configured ?? spec.model.provider;
  const model =
    typeof node.config.model === 'string'
      ? node.config.model
      : provider === spec.model.provider
        ? spec.model.model
        : null;
  return { provider, model };
};

/** The provider 422 (spec section 7). */
export interface ApiIntegrationRefusal {
  nodeId: string;
  nodeType: string;
  providers: string[];
  level: Exclude<IntegrationLevel, 'api'>;
  /** The spec's message form: what runs where, and the three remedies. */
  message: string;
}

export const apiIntegrationMessage = (nodeType: string, provider: string): string =>
  messages.providerNotAvailable(nodeType, [provider]);

/** Where a model step runs, or why it may not: the one rule for run starts and the step executor. */
export type ProviderRoute =
  | {
      refused: false;
      /** The provider the step runs on: its own, or `sandbox` standing in on a sandbox stage. */
      runsOn: string;
      /** Whose credentials: the team's own key (a connection named by the provider), the stage's, or none. */
      credentials: 'team' | 'stage' | 'none';
    }
  | { refused: true; level: Exclude<IntegrationLevel, 'api'> };

/**
 * How a step on `provider` runs in `stage` when the team has (or has not) its own key for it:
 * - `sandbox` runs only on a sandbox stage (on a stage without it, nothing makes it run: `not_allowed`);
 * - an `api` provider runs on the team's own key when there is one, else on the stage's credentials
 *   when the stage turned it on, else on the sandbox when the stage is a sandbox stage; otherwise
 *   only the team's own key would make it run (`byok_only`);
 * - `app_only` and `byok_only` run only on the team's own key;
 * - `not_allowed`, `region_restricted` and unknown providers (reported as `not_allowed`) never run.
 */
export const routeProvider = (
  provider: string,
  stage: Pick<StageProviders, 'configured' | 'sandbox'>,
  teamHasKey: boolean,
): ProviderRoute => {
  const entry = providerEntry(provider);
  const level: IntegrationLevel = entry?.level ?? 'not_allowed';
  if (entry?.protocol === 'sandbox') {
    return stage.sandbox
      ? { refused: false, runsOn: provider, credentials: 'none' }
      : { refused: true, level: 'not_allowed' };
  }
  if (level === 'api') {
    if (teamHasKey) return { refused: false, runsOn: provider, credentials: 'team' };
    if (stage.configured.includes(provider)) return { refused: false, runsOn: provider, credentials: 'stage' };
    if (stage.sandbox) return { refused: false, runsOn: sandboxProviderKey, credentials: 'none' };
    return { refused: true, level: 'byok_only' };
  }
  if ((level === 'app_only' || level === 'byok_only') && teamHasKey) {
    return { refused: false, runsOn: provider, credentials: 'team' };
  }
  return { refused: true, level };
};

/**
 * The first model step (canvas order) that cannot run through the API in this stage
 * (`routeProvider`), given the team's own keys (connections, named by provider key). Null when
 * every step may run.
 */
export const checkApiIntegration = (
  canvas: Pick<Canvas, 'nodes'>,
  teamConnections: ReadonlySet<string>,
  stage: Pick<StageProviders, 'configured' | 'sandbox'>,
): ApiIntegrationRefusal | null => {
  for (const node of canvas.nodes) {
    const spec = getNodeSpec(node.type);
    const use = spec ? stepProvider(node, spec) : null;
    if (!use) continue;
    const route = routeProvider(use.provider, stage, teamConnections.has(use.provider));
    if (!route.refused) continue;
    return {
      nodeId: node.id,
      nodeType: node.type,
      providers: [use.provider],
      level: route.level,
      message: apiIntegrationMessage(node.type, use.provider),
    };
  }
  return null;
};
