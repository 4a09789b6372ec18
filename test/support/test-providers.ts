/**
 * Providers that exist only in tests: one of each integration level the contract names (`app_only`,
 * `byok_only`, `region_restricted`, `not_allowed`) and a model with licence facts of its own, on
 * `*.example` hosts. The shipped registry (platform/providers.ts) holds real providers only; importing
 * this module adds these to the test process's registry, where the local API and the step executor
 * under test read them.
 */
import { type ProviderEntry, providerEntry, registerProviders } from '../../platform/providers.ts';

export const testProviders: readonly ProviderEntry[] = [
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

// Once per process: every test file that needs them imports this module.
if (!providerEntry('studio-x')) registerProviders(testProviders);
