/**
 * Model facts (platform/model-facts.ts) held equal to the catalogue, and the checks they drive:
 * `cdk synth` fails on a default a stage's Region does not serve or that is past its end of life,
 * warns within 90 days of it, and the smoke run's `judgeLifecycle` reads a GetFoundationModel status.
 * The clock is injected (`-c modelFactsDate`); today is the day the facts were read.
 */
import { Annotations, Match } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { catalogue } from '../functions/nodes/catalogue/index.ts';
import { buildApp } from '../lib/build-app.ts';
import { contextKeys, stageConfig } from '../lib/stages.ts';
import { catalogueDefaults, modelNodeTypes, parseModelDefaults } from '../platform/model-defaults.ts';
import { eolWarningDays, factsOf, judgeLifecycle, judgeModel, modelFacts } from '../platform/model-facts.ts';
import { bedrockDefaultModels, providerRegistry } from '../platform/providers.ts';
import { pinnedProd, repositoryStages, synthOnly } from './support/stages.ts';

const today = '2026-12-07';
const now = new Date(`${today}T12:00:00Z`);
const configOf = (context: Record<string, unknown>) => stageConfig((key) => context[key], {});
const prodRegion = repositoryStages().prod?.region as string;

describe('the facts and the catalogue', () => {
  it('holds each model node type’s catalogue model equal to catalogueDefaults', () => {
    for (const type of modelNodeTypes) {
      expect(catalogue[type].model, type).toMatchObject(catalogueDefaults[type]);
    }
  });

  it('has a facts row, with a source and the date read, for every model the catalogue, Bedrock defaults or registry name', () => {
    const named = [
      ...Object.values(catalogueDefaults),
      ...Object.values(bedrockDefaultModels).map((model) => ({ provider: 'bedrock', model })),
      ...providerRegistry().flatMap((entry) =>
        Object.keys(entry.models).map((model) => ({ provider: entry.key, model })),
      ),
    ];
    for (const { provider, model } of named) {
      const facts = factsOf(provider, model);
      expect(facts, `${provider}:${model}`).toBeDefined();
      expect(facts?.sources.length).toBeGreaterThan(0);
      expect(facts?.read).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    }
    // One row per model.
    expect(new Set(modelFacts.map((f) => `${f.provider}:${f.model}`)).size).toBe(modelFacts.length);
  });

  it('ships no default that is Legacy, past or within 90 days of its end of life, as of today', () => {
    for (const type of modelNodeTypes) {
      const { provider, model } = catalogueDefaults[type];
      expect(judgeModel(factsOf(provider, model)!, undefined, now), `${type} ${model}`).toEqual({ outcome: 'ok' });
    }
  });

  it('serves every default prod enables from prod’s pinned Region (us-west-2): the catalogue’s, as it pins them', () => {
    const pins = parseModelDefaults(repositoryStages().prod?.modelDefaults, 'prod');
    expect(prodRegion).toBe('us-west-2');
    for (const type of modelNodeTypes) {
      const { provider, model } = pins[type] ?? catalogueDefaults[type];
      expect(judgeModel(factsOf(provider, model)!, prodRegion, now), `${type} ${model}`).toEqual({ outcome: 'ok' });
    }
    // Prod pins the two image generators as the catalogue has them, so a change of the catalogue
    // does not change prod's models; they are served from us-west-2 only, hence prod's Region.
    expect(Object.keys(pins).sort()).toEqual(['DiffusionWorker', 'ImageGen']);
    expect(pins.ImageGen).toEqual(catalogueDefaults.ImageGen);
    expect(judgeModel(factsOf('bedrock', bedrockDefaultModels.image)!, 'us-east-1', now).outcome).toBe('fail');
  });
});

describe('synth checks the defaults a stage enables', () => {
  const prodOn = (pins: Record<string, unknown>, date = today) => ({
    ...pinnedProd(pins),
    [contextKeys.modelFactsDate]: date,
  });

  it('passes prod as cdk.json pins it, today, with no warning', () => {
    expect(configOf(prodOn({})).modelWarnings).toEqual([]);
  });

  it('fails a default the stage’s Region does not serve', () => {
    // A stage in us-east-1 without its own image pins: DiffusionWorker is the catalogue's SD3.5
    // Large, an us-west-2 id.
    const pins = { region: 'us-east-1', modelDefaults: { ImageGen: 'replicate:black-forest-labs/flux-schnell' } };
    expect(() => configOf(prodOn(pins))).toThrow(
      /DiffusionWorker: bedrock:stability\.sd3-5-large-v1:0 is not served from us-east-1: it is served from us-west-2/,
    );
    // The same default on a stage in us-west-2 is served.
    expect(() => configOf(prodOn({ ...pins, region: 'us-west-2' }))).not.toThrow();
  });

  it('fails a default past its end of life', () => {
    const pins = {
      modelDefaults: {
        ...(repositoryStages().prod?.modelDefaults as object),
        LlmWorker: 'bedrock:us.anthropic.claude-3-5-haiku-20241022-v1:0',
      },
    };
    expect(() => configOf(prodOn(pins))).toThrow(
      /LlmWorker: bedrock:us\.anthropic\.claude-3-5-haiku-20241022-v1:0 is past its end of life \(end of life 2026-06-19\)/,
    );
  });

  it('warns within 90 days of an end of life, and not before, on the injected date', () => {
    const pins = {
      modelDefaults: {
        ...(repositoryStages().prod?.modelDefaults as object),
        LlmWorker: 'bedrock:us.anthropic.claude-3-5-haiku-20241022-v1:0',
      },
    };
    expect(configOf(prodOn(pins, '2026-04-01')).modelWarnings).toEqual([
      expect.stringMatching(/^LlmWorker: .*claude-3-5-haiku.* reaches its end of life in 79 days/),
    ]);
    expect(eolWarningDays).toBe(90);
    // 91 days before: Legacy (its status as published), not yet near its end.
    expect(configOf(prodOn(pins, '2026-03-20')).modelWarnings).toEqual([
      expect.stringMatching(/^LlmWorker: .* is Legacy \(end of life 2026-06-19\)/),
    ]);
    expect(() => configOf(prodOn(pins, '2026-13-01'))).toThrow(/context modelFactsDate must be a date as YYYY-MM-DD/);
  });

  it('shows the warning as a CDK annotation on the API stack', { timeout: 120_000 }, () => {
    const pins = {
      modelDefaults: {
        ...(repositoryStages().prod?.modelDefaults as object),
        LlmWorker: 'bedrock:us.anthropic.claude-3-5-haiku-20241022-v1:0',
      },
    };
    const { api } = buildApp({ ...synthOnly, ...prodOn(pins, '2026-04-01') }, {});
    Annotations.fromStack(api).hasWarning('*', Match.stringLikeRegexp('reaches its end of life in 79 days'));
  });

  it('checks only what the stage turns on: a provider that is off enables nothing', () => {
    // dev without Bedrock: the catalogue's Bedrock defaults are not checked against any date.
    expect(configOf({ [contextKeys.modelFactsDate]: '2030-01-01' }).modelWarnings).toEqual([]);
  });
});

describe('judgeLifecycle (the smoke run’s verdict on a GetFoundationModel answer)', () => {
  const haiku = factsOf('bedrock', bedrockDefaultModels.text)!;
  const old = factsOf('bedrock', 'us.anthropic.claude-3-5-haiku-20241022-v1:0')!;

  it('is ok for an ACTIVE answer of an Active model', () => {
    expect(judgeLifecycle(haiku, 'ACTIVE', now)).toEqual({ outcome: 'ok' });
  });

  it('warns when AWS answers LEGACY for a model recorded Active (the record is out of date)', () => {
    expect(judgeLifecycle(haiku, 'LEGACY', now)).toMatchObject({
      outcome: 'warn',
      reason: expect.stringMatching(/is Legacy/),
    });
    expect(judgeLifecycle(haiku, 'SOMETHING', now)).toMatchObject({ outcome: 'warn' });
  });

  it('fails past the end of life, whatever AWS answers', () => {
    expect(judgeLifecycle(old, 'LEGACY', now)).toMatchObject({
      outcome: 'fail',
      reason: expect.stringMatching(/past its end of life \(end of life 2026-06-19\)/),
    });
    expect(judgeLifecycle(haiku, 'EOL', now)).toMatchObject({ outcome: 'fail' });
  });
});
