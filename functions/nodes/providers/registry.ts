import {
  type ModelChoice,
  type ModelDefaults,
  type ModelNodeType,
  shippedModelStep,
} from '../../../platform/model-defaults.ts';
import { listedPrice } from '../../../platform/paid-models.ts';
import {
  type IntegrationLevel,
  type LicenceFacts,
  providerEntry,
  regionExcludes,
  sandboxProviderKey,
} from '../../../platform/providers.ts';
import { messages } from '../../../schemas/error-messages.ts';
import type { Canvas, CanvasNode } from '../catalogue/canvas.ts';
import type { StageProviders } from './stage.ts';

// The providers' facts are data the stack reads too (which providers a stage may turn on), so they
// live in platform/; the rules on them (routing, the provider 422, licence stamping) stay here.

/**
 * Licence facts of a model as the registry has them now; an unknown provider has none (unchecked).
 * A model pinned to a version (Replicate's `owner/name:version`) has its name's facts.
 */
export const licenceFacts = (provider: string, model: string): LicenceFacts => {
  const entry = providerEntry(provider);
  if (!entry) return { licence: null, licenceUrl: null, commercialUse: null, termsUrl: null };
  const name = [model, model.split(':')[0] ?? model].find((id) => Object.hasOwn(entry.models, id));
  const own = name === undefined ? undefined : entry.models[name];
  return {
    licence: own?.licence !== undefined ? own.licence : entry.licence,
    licenceUrl: own?.licenceUrl !== undefined ? own.licenceUrl : entry.licenceUrl,
    commercialUse: own?.commercialUse !== undefined ? own.commercialUse : entry.commercialUse,
    termsUrl: own?.termsUrl !== undefined ? own.termsUrl : entry.termsUrl,
  };
};

/**
 * The provider a model step runs on: `config.provider`, else the node type's default (the stage's
 * own, `MODEL_DEFAULTS`, else the catalogue's). The model is `config.model`, else that default's
 * when the provider is its provider (or the catalogue's model on the catalogue's provider), else
 * null (the provider's own default, which the executor names when it runs). Null for steps that
 * are not model steps.
 */
export const stepProvider = (
  node: Pick<CanvasNode, 'config'>,
  spec: { type: string; model: ModelChoice | null | undefined },
  stageDefaults?: ModelDefaults,
): { provider: string; model: string | null } | null => {
  if (!spec.model) return null;
  const pinned =
    stageDefaults && Object.hasOwn(stageDefaults, spec.type) ? stageDefaults[spec.type as ModelNodeType] : undefined;
  const fallback = pinned ?? spec.model;
  const configured = typeof node.config.provider === 'string' ? node.config.provider : undefined;
  const provider = configured ?? fallback.provider;
  const model =
    typeof node.config.model === 'string'
      ? node.config.model
      : provider === fallback.provider
        ? fallback.model
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
  /** Set when the provider is open but the stage does not pay for this model on its key (`provider:model`). */
  model?: string;
  /** The spec's message form: what runs where, and the three remedies. */
  message: string;
}

export const apiIntegrationMessage = (nodeType: string, provider: string, model?: string): string =>
  model === undefined ? messages.providerNotAvailable(nodeType, [provider]) : messages.modelNotPaid(nodeType, model);

/** Where a model step runs, or why it may not: the one rule for run starts and the step executor. */
export type ProviderRoute =
  | {
      refused: false;
      /** The provider the step runs on: its own, or `sandbox` standing in on a sandbox stage. */
      runsOn: string;
      /** Whose credentials: the team's own key (a connection named by the provider), the stage's, or none. */
      credentials: 'team' | 'stage' | 'none';
    }
  | {
      refused: true;
      level: Exclude<IntegrationLevel, 'api'>;
      /** `provider:model` when only the model is refused: the stage does not pay for it on its key. */
      unpaid?: string;
    };

/**
 * Whether the stage pays for `model` on its own key for `provider` (platform/paid-models.ts): a
 * model on its list or a default; any, when its list is open. Bedrock's models are the operator's
 * choice already (the step executor's role may invoke only those granted); a step naming no model
 * runs the registry's own choice.
 */
const stagePaysFor = (
  stage: Pick<StageProviders, 'paidModels' | 'modelDefaults'>,
  protocol: string | undefined,
  provider: string,
  model: string | null,
): boolean =>
  !stage.paidModels ||
  stage.paidModels.open ||
  protocol === 'bedrock' ||
  model === null ||
  listedPrice(stage.paidModels, stage.modelDefaults, provider, model) !== undefined;

/**
 * How a step on `provider` running `model` (null: the provider's own default) runs in `stage` when the team has (or has not) its own key for it:
 * - `sandbox` runs only on a sandbox stage (on a stage without it, nothing makes it run: `not_allowed`);
 * - an `api` provider runs on the team's own key when there is one, else on the stage's credentials
 *   when the stage turned it on and pays for `model` (its list of paid models, else `byok_only`
 *   naming the model), else on the sandbox when the stage is a sandbox stage; otherwise only the
 *   team's own key would make it run (`byok_only`);
 * - `app_only` and `byok_only` run only on the team's own key;
 * - `not_allowed`, `region_restricted` and unknown providers (reported as `not_allowed`) never run.
 */
export const routeProvider = (
  provider: string,
  stage: Pick<StageProviders, 'configured' | 'sandbox' | 'levels' | 'paidModels' | 'modelDefaults'>,
  teamHasKey: boolean,
  model: string | null,
): ProviderRoute => {
  const entry = providerEntry(provider);
  // A stage may bar a provider further than the registry does (`-c providerLevels`), never open it more.
  const registered: IntegrationLevel = entry?.level ?? 'not_allowed';
  const staged = stage.levels && Object.hasOwn(stage.levels, provider) ? stage.levels[provider] : undefined;
  const level: IntegrationLevel = staged && registered === 'api' ? staged : registered;
  if (entry?.protocol === 'sandbox') {
    return stage.sandbox
      ? { refused: false, runsOn: provider, credentials: 'none' }
      : { refused: true, level: 'not_allowed' };
  }
  if (level === 'api') {
    if (teamHasKey && entry?.protocol !== 'bedrock') return { refused: false, runsOn: provider, credentials: 'team' };
    if (stage.configured.includes(provider)) {
      return stagePaysFor(stage, entry?.protocol, provider, model)
        ? { refused: false, runsOn: provider, credentials: 'stage' }
        : { refused: true, level: 'byok_only', unpaid: `${provider}:${model}` };
    }
    if (stage.sandbox) return { refused: false, runsOn: sandboxProviderKey, credentials: 'none' };
    // Bedrock runs only in the stage's own account: no team's key would run it.
    return { refused: true, level: entry?.protocol === 'bedrock' ? 'not_allowed' : 'byok_only' };
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
  stage: Pick<StageProviders, 'configured' | 'sandbox' | 'region' | 'levels' | 'modelDefaults' | 'paidModels'>,
): ApiIntegrationRefusal | null => {
  for (const node of canvas.nodes) {
    const spec = shippedModelStep(node.type);
    const use = spec ? stepProvider(node, spec, stage.modelDefaults) : null;
    if (!use) continue;
    const route = routeProvider(use.provider, stage, teamConnections.has(use.provider), use.model);
    const entry = providerEntry(use.provider);
    // A model whose licence excludes the stage's Region never runs there, whoever's key it is on.
    const level: Exclude<IntegrationLevel, 'api'> | undefined = route.refused
      ? route.level
      : entry && use.model && route.runsOn === use.provider && regionExcludes(entry, use.model, stage.region)
        ? 'region_restricted'
        : undefined;
    if (!level) continue;
    const unpaid = route.refused ? route.unpaid : undefined;
    return {
      nodeId: node.id,
      nodeType: node.type,
      providers: [use.provider],
      level,
      ...(unpaid !== undefined && { model: unpaid }),
      message: apiIntegrationMessage(node.type, use.provider, unpaid),
    };
  }
  return null;
};
