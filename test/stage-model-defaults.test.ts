import './support/test-providers.ts';
/**
 * A stage's own default models (`-c modelDefaults`): parsed and checked at synth (a typo, a node type
 * that is no model step, a provider the stage does not turn on fail `cdk synth`), carried to every
 * function in `MODEL_DEFAULTS`, granted on Bedrock, and read by the runtime's routing: a step that
 * names no provider runs on the stage's default instead of the catalogue's.
 */
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { catalogue, getNodeSpec } from '../functions/nodes/catalogue/index.ts';
import { checkApiIntegration, licenceFacts, stepProvider } from '../functions/nodes/providers/registry.ts';
import { stageProvidersFromEnv } from '../functions/nodes/providers/stage.ts';
import { buildApp } from '../lib/build-app.ts';
import { contextKeys, stageConfig } from '../lib/stages.ts';
import { envNames } from '../platform/definitions.ts';
import { modelNodeTypes, parseModelDefaults } from '../platform/model-defaults.ts';
import { bedrockDefaultModels } from '../platform/providers.ts';
import { pinnedProd } from './support/stages.ts';

const realEsrgan = 'nightmareai/real-esrgan:f121d640bd286e1fdc67f9799164c1d5be36ff74576ee11c803ae5b665dd46aa';

/** The stage config of a context (`-c key=value` values, and cdk.json's `stages` block). */
const configOf = (context: Record<string, unknown>) => stageConfig((key) => context[key], {});

describe('-c modelDefaults: parsed and checked at synth', () => {
  it('names exactly the catalogue’s model node types', () => {
    const modelTypes = Object.values(catalogue)
      .filter((spec) => spec.model)
      .map((spec) => spec.type);
    expect([...modelNodeTypes].sort()).toEqual(modelTypes.sort());
  });

  it('reads NodeType=provider:model pairs, an object (cdk.json), or that object as JSON text', () => {
    const pinned = {
      Upscaler: { provider: 'replicate', model: realEsrgan },
      ImageGen: { provider: 'bedrock', model: 'stability.sd3-5-large-v1:0' },
    };
    expect(
      parseModelDefaults(`Upscaler=replicate:${realEsrgan}, ImageGen=bedrock:stability.sd3-5-large-v1:0`, 'x'),
    ).toEqual(pinned);
    expect(
      parseModelDefaults({ Upscaler: `replicate:${realEsrgan}`, ImageGen: 'bedrock:stability.sd3-5-large-v1:0' }, 'x'),
    ).toEqual(pinned);
    expect(
      parseModelDefaults(
        JSON.stringify({ Upscaler: `replicate:${realEsrgan}`, ImageGen: 'bedrock:stability.sd3-5-large-v1:0' }),
        'x',
      ),
    ).toEqual(pinned);
    expect(parseModelDefaults(undefined, 'x')).toEqual({});
    expect(parseModelDefaults('', 'x')).toEqual({});
  });

  it('fails synth on an unknown or non-model node type, a malformed value, a type given twice', () => {
    const synth = (value: unknown) => () =>
      configOf({ [contextKeys.providers]: 'bedrock,fal:ssm:/p/fal', [contextKeys.modelDefaults]: value });
    expect(synth('Upscalr=fal:fal-ai/esrgan')).toThrow(
      /context modelDefaults: "Upscalr" is not a model node type \(they are ImageGen, .*Embedder\)/,
    );
    expect(synth('TextEntry=fal:fal-ai/esrgan')).toThrow(/"TextEntry" is not a model node type/);
    expect(synth('Upscaler')).toThrow(/context modelDefaults must be NodeType=provider:model pairs/);
    expect(synth('Upscaler=fal-ai/esrgan')).toThrow(/context modelDefaults: Upscaler must be given as provider:model/);
    expect(synth('Upscaler=fal:')).toThrow(/Upscaler must be given as provider:model/);
    expect(synth('Upscaler=fal:a b')).toThrow(/Upscaler must be given as provider:model/);
    expect(synth('Upscaler=fal:a,Upscaler=fal:b')).toThrow(/context modelDefaults: Upscaler is given twice/);
    expect(synth(['Upscaler=fal:a'])).toThrow(/context modelDefaults must be NodeType=provider:model pairs/);
    expect(synth({ Upscaler: 7 })).toThrow(/Upscaler must be given as provider:model, got 7/);
    expect(synth('{not json')).toThrow(/context modelDefaults is not valid JSON/);
    expect(synth('bedrock:x')).toThrow(/NodeType=provider:model/);
    expect(synth('Upscaler=bedrock:arn/with/slashes')).toThrow(/is not a Bedrock model id/);
  });

  it('fails synth on a provider the stage does not turn on', () => {
    expect(() =>
      configOf({ [contextKeys.providers]: 'bedrock', [contextKeys.modelDefaults]: `Upscaler=replicate:${realEsrgan}` }),
    ).toThrow(
      `context modelDefaults: Upscaler=replicate:${realEsrgan} runs on replicate, which this stage does not turn on (-c providers)`,
    );
    // No providers at all, and the sandbox (never turned on by -c providers) is no default either.
    expect(() => configOf({ [contextKeys.modelDefaults]: 'ImageGen=bedrock:stability.sd3-5-large-v1:0' })).toThrow(
      /runs on bedrock, which this stage does not turn on/,
    );
    expect(() =>
      configOf({ [contextKeys.providers]: 'bedrock', [contextKeys.modelDefaults]: 'ImageGen=sandbox:sandbox-image-1' }),
    ).toThrow(/runs on sandbox, which this stage does not turn on/);
  });

  it('grants a pinned Bedrock model beside the catalogue’s defaults, or beside -c bedrockModels when given', () => {
    const pinned = 'ImageGen=bedrock:amazon.nova-canvas-v1:0,Embedder=bedrock:cohere.embed-english-v3';
    const byDefault = configOf({ [contextKeys.providers]: 'bedrock', [contextKeys.modelDefaults]: pinned });
    expect(byDefault.bedrockModels).toEqual([
      ...new Set(Object.values(bedrockDefaultModels)),
      'amazon.nova-canvas-v1:0',
      'cohere.embed-english-v3',
    ]);
    const explicit = configOf({
      [contextKeys.providers]: 'bedrock',
      [contextKeys.bedrockModels]: 'amazon.nova-lite-v1:0,amazon.nova-canvas-v1:0',
      [contextKeys.modelDefaults]: pinned,
    });
    expect(explicit.bedrockModels).toEqual([
      'amazon.nova-lite-v1:0',
      'amazon.nova-canvas-v1:0',
      'cohere.embed-english-v3',
    ]);
    expect(explicit.modelDefaults).toEqual({
      ImageGen: { provider: 'bedrock', model: 'amazon.nova-canvas-v1:0' },
      Embedder: { provider: 'bedrock', model: 'cohere.embed-english-v3' },
    });
  });

  it('reads the stage’s block in cdk.json; -c wins on dev and may not change a prod pin', () => {
    const block = {
      providers: 'bedrock,fal:ssm:/workflow-run-api/prod/providers/fal',
      modelDefaults: {
        BackgroundRemover: 'fal:fal-ai/birefnet/v2',
        ImageGen: 'fal:fal-ai/flux/schnell',
        DiffusionWorker: 'fal:fal-ai/flux/schnell',
      },
    };
    expect(configOf(pinnedProd(block)).modelDefaults).toEqual({
      BackgroundRemover: { provider: 'fal', model: 'fal-ai/birefnet/v2' },
      ImageGen: { provider: 'fal', model: 'fal-ai/flux/schnell' },
      DiffusionWorker: { provider: 'fal', model: 'fal-ai/flux/schnell' },
    });
    const upscaler = 'Upscaler=bedrock:stability.stable-creative-upscale-v1:0';
    expect(configOf({ stages: { dev: block }, [contextKeys.modelDefaults]: upscaler }).modelDefaults).toEqual({
      Upscaler: { provider: 'bedrock', model: 'stability.stable-creative-upscale-v1:0' },
    });
    expect(() => configOf({ ...pinnedProd(block), [contextKeys.modelDefaults]: upscaler })).toThrow(
      /stage prod pins modelDefaults in cdk.json context.stages.prod; -c modelDefaults=.* would change it/,
    );
  });
});

describe('the synthesized stage', { timeout: 120_000 }, () => {
  const context = {
    'aws:cdk:bundling-stacks': [],
    '@aws-cdk/core:appMode': 'inmemory',
    [contextKeys.providers]: 'bedrock,replicate:ssm:/workflow-run-api/dev/providers/replicate',
    [contextKeys.modelDefaults]: `Upscaler=replicate:${realEsrgan},ImageGen=bedrock:amazon.nova-canvas-v1:0`,
  };
  const resources = Template.fromStack(buildApp(context, {}).api).toJSON().Resources as Record<
    string,
    { Type: string; Properties: Record<string, unknown> }
  >;
  const functions = Object.entries(resources).filter(([, r]) => r.Type === 'AWS::Lambda::Function');

  it('gives every function of the stage MODEL_DEFAULTS (the run start routes on it, the executor runs it)', () => {
    const expected = JSON.stringify({
      Upscaler: `replicate:${realEsrgan}`,
      ImageGen: 'bedrock:amazon.nova-canvas-v1:0',
    });
    const carrying = functions.filter(
      ([, r]) =>
        (r.Properties.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables?.[
          envNames.modelDefaults
        ] === expected,
    );
    const described = carrying.map(([, r]) => r.Properties.Description);
    expect(described).toContain('consumes the Steps queue');
    expect(described).toContain('POST /api/v1/workflows/{id}/runs');
    // Every function but the Python runner, which holds none of the stage's settings.
    expect(carrying.length).toBe(functions.length - 1);
    // A stage that pins nothing sets nothing.
    const plain = Template.fromStack(buildApp({ ...context, [contextKeys.modelDefaults]: '' }, {}).api).toJSON();
    expect(JSON.stringify(plain)).not.toContain(envNames.modelDefaults);
  });

  it('lets the step executor invoke the pinned Bedrock model', () => {
    const executor = functions.find(([, r]) => r.Properties.Description === 'consumes the Steps queue');
    if (!executor) throw new Error('no step executor');
    const role = (executor[1].Properties.Role as { 'Fn::GetAtt': [string] })['Fn::GetAtt'][0];
    const invoke = Object.values(resources)
      .filter((r) => r.Type === 'AWS::IAM::Policy' && JSON.stringify(r.Properties.Roles).includes(role))
      .flatMap(
        (p) => (p.Properties.PolicyDocument as { Statement: { Action: unknown; Resource: unknown }[] }).Statement,
      )
      .filter((statement) => statement.Action === 'bedrock:InvokeModel');
    expect(invoke).toHaveLength(1);
    const granted = JSON.stringify(invoke[0]?.Resource);
    expect(granted).toContain('::foundation-model/amazon.nova-canvas-v1:0"');
    // The catalogue's defaults stay granted: a step may still name one.
    expect(granted).toContain(`::foundation-model/${bedrockDefaultModels.image}"`);
  });
});

describe('the runtime reads MODEL_DEFAULTS', () => {
  const env = { [envNames.modelDefaults]: `Upscaler=replicate:${realEsrgan},ImageGen=fal:fal-ai/flux/schnell` };

  it('in either form, and refuses a malformed one at the start', () => {
    const stage = stageProvidersFromEnv(env);
    expect(stage.modelDefaults).toEqual({
      Upscaler: { provider: 'replicate', model: realEsrgan },
      ImageGen: { provider: 'fal', model: 'fal-ai/flux/schnell' },
    });
    expect(
      stageProvidersFromEnv({ [envNames.modelDefaults]: '{"Upscaler":"fal:fal-ai/esrgan"}' }).modelDefaults,
    ).toEqual({ Upscaler: { provider: 'fal', model: 'fal-ai/esrgan' } });
    expect(stageProvidersFromEnv({}).modelDefaults).toBeUndefined();
    expect(() => stageProvidersFromEnv({ [envNames.modelDefaults]: 'Embedder' })).toThrow(/^MODEL_DEFAULTS must be/);
  });

  it('a step naming no provider runs on the stage’s default; one naming a provider or a model keeps its choice', () => {
    const { modelDefaults } = stageProvidersFromEnv(env);
    const upscaler = getNodeSpec('Upscaler')!;
    expect(stepProvider({ config: {} }, upscaler, modelDefaults)).toEqual({ provider: 'replicate', model: realEsrgan });
    // Without the stage's defaults, the catalogue's.
    expect(stepProvider({ config: {} }, upscaler)).toEqual({
      provider: 'bedrock',
      model: bedrockDefaultModels.upscale,
    });
    // The catalogue's provider named: the catalogue's model on it.
    expect(stepProvider({ config: { provider: 'bedrock' } }, upscaler, modelDefaults)).toEqual({
      provider: 'bedrock',
      model: bedrockDefaultModels.upscale,
    });
    // A model alone is the default provider's model.
    expect(stepProvider({ config: { model: 'nightmareai/real-esrgan' } }, upscaler, modelDefaults)).toEqual({
      provider: 'replicate',
      model: 'nightmareai/real-esrgan',
    });
    expect(stepProvider({ config: { provider: 'fal' } }, upscaler, modelDefaults)).toEqual({
      provider: 'fal',
      model: null,
    });
    // A type the stage does not pin keeps the catalogue's.
    expect(stepProvider({ config: {} }, getNodeSpec('Embedder')!, modelDefaults)).toEqual({
      provider: 'bedrock',
      model: bedrockDefaultModels.embedding,
    });
  });

  it('routes the run start on the stage’s default: its provider’s 422, not the catalogue’s', () => {
    const canvas = { nodes: [{ id: 'big', type: 'Upscaler', config: {} }] } as never;
    const { modelDefaults } = stageProvidersFromEnv(env);
    // Bedrock on, Replicate off, no sandbox: the shipped default would run; the pinned one is refused.
    const stage = { configured: ['bedrock'], sandbox: false, modelDefaults };
    expect(checkApiIntegration(canvas, new Set(), { ...stage, modelDefaults: {} })).toBeNull();
    expect(checkApiIntegration(canvas, new Set(), stage)).toMatchObject({
      providers: ['replicate'],
      level: 'byok_only',
    });
    expect(checkApiIntegration(canvas, new Set(['replicate']), stage)).toBeNull();
  });

  it('stamps a pinned Replicate version with its model’s licence, and an unknown model as unchecked', () => {
    const { modelDefaults } = stageProvidersFromEnv(env);
    const use = stepProvider({ config: {} }, getNodeSpec('Upscaler')!, modelDefaults);
    expect(licenceFacts(use!.provider, use!.model!)).toMatchObject({ licence: 'BSD-3-Clause', commercialUse: 'yes' });
    expect(licenceFacts('replicate', 'acme/upscaler:0123abcd')).toMatchObject({ licence: null, commercialUse: null });
    // A Bedrock id's own colon is part of it: an unknown one has the provider's terms, no model's.
    expect(licenceFacts('bedrock', 'stability.stable-creative-upscale-v1:0')).toMatchObject({
      licence: null,
      commercialUse: 'provider_terms',
    });
  });
});
