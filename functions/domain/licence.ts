/**
 * Licence and lineage of a run output (spec 2.3): `licence` is as strict as the strictest model
 * the output comes from (no > unchecked > provider_terms > yes; a model whose commercial use is
 * null counts as unchecked), `ai_generated` and `generated_by` name those model steps.
 * Not legal advice: the facts are the registry's, stamped when each step ran.
 */

import { type ModelDefaults, shippedModelStep } from '../../platform/model-defaults.ts';
import type { CommercialUse } from '../../platform/providers.ts';
import type { LicenceModel } from '../../schemas/run-words.ts';
import type { GeneratedBy } from '../../schemas/runs.ts';
import type { CanvasNode } from '../nodes/catalogue/canvas.ts';
import { licenceFacts, stepProvider } from '../nodes/providers/registry.ts';

export type OutputCommercialUse = 'yes' | 'provider_terms' | 'unchecked' | 'no';

export interface OutputLicence {
  commercial_use: OutputCommercialUse;
  models: LicenceModel[];
}

/** A model step as the orchestrator records it (`StepOutcome.model` plus the node and the time). */
export interface ModelStep {
  nodeId: string;
  provider: string;
  model: string;
  /** When the step ran (ISO 8601 string or Date). */
  stampedAt: string | Date;
}

/** Most strict first. */
const commercialUseOrder: readonly OutputCommercialUse[] = ['no', 'unchecked', 'provider_terms', 'yes'];

const asOutputUse = (use: CommercialUse): OutputCommercialUse => use ?? 'unchecked';

/** The strictest of `uses` (null counts as unchecked); undefined when there is none. */
export const strictestCommercialUse = (uses: readonly CommercialUse[]): OutputCommercialUse | undefined => {
  if (uses.length === 0) return undefined;
  return uses
    .map(asOutputUse)
    .reduce((a, b) => (commercialUseOrder.indexOf(a) <= commercialUseOrder.indexOf(b) ? a : b));
};

/** The LicenceModel of one model step, with the registry's facts as they are now (call it when the step runs). */
export const stampLicenceModel = (step: ModelStep): LicenceModel => {
  const facts = licenceFacts(step.provider, step.model);
  return {
    node_id: step.nodeId,
    provider_key: step.provider,
    model: step.model,
    licence: facts.licence,
    licence_url: facts.licenceUrl,
    commercial_use: facts.commercialUse,
    terms_url: facts.termsUrl,
    stamped_at: typeof step.stampedAt === 'string' ? step.stampedAt : step.stampedAt.toISOString(),
  };
};

/** Joins stamped LicenceModels (one per node, sorted by node id) into an output licence; undefined when none. */
export const combineLicences = (models: readonly LicenceModel[]): OutputLicence | undefined => {
  const byNode = new Map<string, LicenceModel>();
  for (const model of models) if (!byNode.has(model.node_id)) byNode.set(model.node_id, model);
  const unique = [...byNode.values()].sort((a, b) => (a.node_id < b.node_id ? -1 : a.node_id > b.node_id ? 1 : 0));
  const commercialUse = strictestCommercialUse(unique.map((m) => m.commercial_use));
  return commercialUse ? { commercial_use: commercialUse, models: unique } : undefined;
};

/** The licence of an output made from `models` (stamped now from the registry); undefined when no model. */
export const licenceFor = (models: readonly ModelStep[]): OutputLicence | undefined =>
  combineLicences(models.map(stampLicenceModel));

/**
 * The lineage fields of a RunOutput from the stamped model steps it comes from (itself and every
 * ancestor; see `ancestry` in run-graph.ts): `ai_generated`, and `generated_by` and `licence`
 * only when there is at least one.
 */
export const provenanceFor = (
  models: readonly LicenceModel[],
): { ai_generated: boolean; generated_by?: GeneratedBy[]; licence?: OutputLicence } => {
  const licence = combineLicences(models);
  if (!licence) return { ai_generated: false };
  return {
    ai_generated: true,
    generated_by: licence.models.map((m) => ({ node_id: m.node_id, provider: m.provider_key, model: m.model })),
    licence,
  };
};

/**
 * The licence the outputs of a run of `nodes` would carry at the strictest: every model step it
 * would run, on the provider and model the step resolves (`stepProvider`), stamped `now` from the
 * registry; undefined when it runs no model. A step whose model is the provider's own default (named
 * only when it runs) is stamped with its provider's facts and an empty model.
 */
export const plannedLicence = (
  nodes: readonly Pick<CanvasNode, 'id' | 'type' | 'config'>[],
  modelDefaults: ModelDefaults | undefined,
  now: Date,
): OutputLicence | undefined =>
  licenceFor(
    nodes.flatMap((node) => {
      const spec = shippedModelStep(node.type);
      const use = spec && stepProvider(node, spec, modelDefaults);
      return use ? [{ nodeId: node.id, provider: use.provider, model: use.model ?? '', stampedAt: now }] : [];
    }),
  );
