import './support/test-providers.ts';
/**
 * The shipped registry's defaults: every model node type names a real model on a real provider
 * (Bedrock's where Bedrock has one), each with the licence facts its card gives (docs/models.md),
 * and a model whose licence excludes the stage's Region is refused there as `region_restricted`.
 */
import { describe, expect, it } from 'vitest';
import { catalogue, getNodeSpec } from '../functions/nodes/catalogue/index.ts';
import { checkApiIntegration, licenceFacts, routeProvider } from '../functions/nodes/providers/registry.ts';
import { modelNodeTypes } from '../platform/model-defaults.ts';
import { providerEntry, sandboxProviderKey } from '../platform/providers.ts';

const modelTypes = Object.values(catalogue).filter((spec) => spec.model);

describe('every model node type does real work by default', () => {
  it('names a real provider and model for each model node type, with a sandbox model to stand in for it', () => {
    expect(modelTypes.map((s) => s.type).sort()).toEqual([...modelNodeTypes].sort());
    for (const spec of modelTypes) {
      const model = spec.model!;
      expect(model.provider, spec.type).not.toBe(sandboxProviderKey);
      expect(['bedrock', 'fal', 'replicate'], spec.type).toContain(model.provider);
      expect(model.sandboxModel, spec.type).toMatch(/^sandbox-/);
    }
  });

  it('runs on Bedrock wherever Bedrock has a model for the node type', () => {
    const onBedrock = modelTypes
      .filter((s) => s.model?.provider === 'bedrock')
      .map((s) => s.type)
      .sort();
    expect(onBedrock).toEqual(
      [
        'BackgroundRemover',
        'ControlNetFilter',
        'DiffusionWorker',
        'Embedder',
        'ImageGen',
        'LlmWorker',
        'Upscaler',
        'VisionInterrogator',
      ].sort(),
    );
  });

  it("carries each default model's licence facts, or says it is unchecked", () => {
    const facts = Object.fromEntries(
      modelTypes.map((s) => [s.type, licenceFacts(s.model!.provider, s.model!.model)] as const),
    );
    expect(facts.TwoDToThreeD).toMatchObject({ licence: 'MIT', commercialUse: 'yes' });
    expect(facts.AudioGen).toMatchObject({
      licence: 'Stability AI Community License',
      commercialUse: 'provider_terms',
    });
    expect(facts.LlmWorker).toMatchObject({ licence: 'AWS Third-Party Models EULA', commercialUse: 'provider_terms' });
    expect(facts.Embedder).toMatchObject({ licence: 'AWS Service Terms', commercialUse: 'provider_terms' });
    // Hosted weights or terms not confirmed: no claim is made.
    for (const type of ['DepthEstimator', 'PbrSynthesizer', 'AutoRigger']) {
      expect(facts[type]?.commercialUse, type).toBeNull();
    }
    expect(licenceFacts('replicate', 'meta/musicgen')).toMatchObject({ licence: 'CC-BY-NC-4.0', commercialUse: 'no' });
  });

  it('on a sandbox stage without the provider, the sandbox stands in; on a stage without it, the provider 422', () => {
    expect(routeProvider('bedrock', { configured: [], sandbox: true }, false, null)).toMatchObject({
      runsOn: 'sandbox',
    });
    expect(routeProvider('bedrock', { configured: ['bedrock'], sandbox: false }, false, null)).toMatchObject({
      runsOn: 'bedrock',
      credentials: 'stage',
    });
    // No team's key runs Bedrock: it lives in the stage's account.
    expect(routeProvider('bedrock', { configured: [], sandbox: false }, true, null)).toEqual({
      refused: true,
      level: 'not_allowed',
    });
    expect(routeProvider('fal', { configured: [], sandbox: false }, false, null)).toEqual({
      refused: true,
      level: 'byok_only',
    });
    expect(routeProvider('fal', { configured: [], sandbox: false }, true, null)).toMatchObject({ credentials: 'team' });
  });

  it('refuses a model whose licence excludes the stage’s Region as region_restricted, before anything is held', () => {
    const spec = getNodeSpec('TwoDToThreeD');
    expect(spec).toBeDefined();
    const canvas = {
      nodes: [{ id: 'mesh', type: 'TwoDToThreeD', config: { provider: 'fal', model: 'fal-ai/hunyuan3d/v2' } }],
    } as never;
    const stage = (region: string) => ({ configured: ['fal'], sandbox: false, region });
    expect(checkApiIntegration(canvas, new Set(), stage('eu-west-1'))).toMatchObject({
      level: 'region_restricted',
      providers: ['fal'],
    });
    expect(checkApiIntegration(canvas, new Set(), stage('eu-west-2'))).toMatchObject({ level: 'region_restricted' });
    expect(checkApiIntegration(canvas, new Set(), stage('ap-northeast-2'))).toMatchObject({
      level: 'region_restricted',
    });
    expect(checkApiIntegration(canvas, new Set(['fal']), stage('eu-central-1'))).toMatchObject({
      level: 'region_restricted',
    });
    expect(checkApiIntegration(canvas, new Set(), stage('us-east-1'))).toBeNull();
    expect(providerEntry('fal')?.excludedRegions).toBeDefined();
  });

  it('lets a stage bar a provider further (its provider 422 stays reachable), never open one more', () => {
    const stage = { configured: ['fal'], sandbox: false, levels: { fal: 'byok_only' as const } };
    expect(routeProvider('fal', stage, false, null)).toEqual({ refused: true, level: 'byok_only' });
    expect(routeProvider('fal', stage, true, null)).toMatchObject({ refused: false, credentials: 'team' });
    expect(routeProvider('fal', { ...stage, levels: { fal: 'not_allowed' } }, true, null)).toEqual({
      refused: true,
      level: 'not_allowed',
    });
    // A level never opens a provider the registry bars.
    expect(routeProvider('closed-w', { ...stage, levels: { 'closed-w': 'api' } }, true, null)).toMatchObject({
      refused: true,
    });
    const canvas = { nodes: [{ id: 'a', type: 'AudioGen', config: {} }] } as never;
    expect(checkApiIntegration(canvas, new Set(), stage)).toMatchObject({ providers: ['fal'], level: 'byok_only' });
  });
});
