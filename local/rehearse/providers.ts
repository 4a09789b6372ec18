/**
 * The providers the rehearsal's model steps reach beyond the sandbox, each a stand-in on loopback
 * that speaks the provider's own protocol, turned on as a deployed stage turns them on (the stage's
 * `-c providers`, `rehearsalContext`):
 * - Bedrock (test/stand-ins/bedrock.ts, the Bedrock Runtime REST-JSON protocol over HTTP/2): no
 *   secret, the role is the credential; the bundles' SDK reaches the stand-in through its own
 *   per-service endpoint variable, `AWS_ENDPOINT_URL_BEDROCK_RUNTIME`.
 * - Replicate (test/stand-ins/replicate.ts, with its webhook signatures) and fal
 *   (test/stand-ins/fal.ts, its queue API and ED25519-signed webhooks, its keys at
 *   `PROVIDER_FAL_JWKS_URL`): each names an SSM SecureString parameter, put here into the
 *   secret-store emulator (local/secret-store.ts) with the real SDK, so the step executor's and the
 *   webhook route's bundles read their credentials (the API key, and the stand-in's address as its
 *   base URL) with GetParameter WithDecryption, through `AWS_ENDPOINT_URL_SSM`.
 * The stage is pinned to us-west-2, where every Bedrock default of the catalogue is served (synth
 * refuses a stage whose Region does not serve an enabled default), so the smoke run's model checks
 * run every catalogue default on its own provider. The job providers announce their webhooks to the
 * rehearsal's API front (`PUBLIC_BASE_URL`, on a port chosen here for the front to take).
 */
import { createServer } from 'node:net';
import { PutParameterCommand } from '@aws-sdk/client-ssm';
import { encodePng, makeImage } from '../../functions/nodes/media/png.ts';
import { pinKeys } from '../../lib/stage-pins.ts';
import { contextKeys } from '../../lib/stages.ts';
import { startBedrockStandIn } from '../../test/stand-ins/bedrock.ts';
import { startFalStandIn } from '../../test/stand-ins/fal.ts';
import { falAnswers, falFiles } from '../../test/stand-ins/fal-answers.ts';
import { startFileServer } from '../../test/stand-ins/http.ts';
import { startReplicateStandIn } from '../../test/stand-ins/replicate.ts';
import { startSecretStore } from '../secret-store.ts';

/** Where the rehearsal's stage keeps each job provider's credentials: an SSM SecureString parameter. */
export const replicateParameter = '/workflow-run-api/rehearsal/providers/replicate';
export const falParameter = '/workflow-run-api/rehearsal/providers/fal';

/** The providers the rehearsal's stage turns on: a model step whose default is on another runs on the sandbox. */
export const rehearsalProviders = ['bedrock', 'replicate', 'fal'] as const;

/**
 * The stage context the rehearsal synthesizes with: Bedrock on (no secret), Replicate and fal on
 * with their credentials in SSM, in a Region that serves every Bedrock default.
 */
export const rehearsalContext = {
  [contextKeys.providers]: `bedrock,replicate:ssm:${replicateParameter},fal:ssm:${falParameter}`,
  [pinKeys.region]: 'us-west-2',
} as const;

/** A port free now, for an API front to listen on (its address goes into the functions' settings first). */
export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });

const randomKey = () => Math.random().toString(36).slice(2);

export const startRehearsalProviders = async () => {
  const replicateKey = `r8_rehearsal_${randomKey()}`;
  const falKey = `${randomKey()}:${randomKey()}`;
  const files = await startFileServer({
    '/out.png': { body: encodePng(makeImage(16, 16, (x, y) => [x * 16, y * 16, 128, 255])), contentType: 'image/png' },
    ...falFiles,
  });
  const replicate = await startReplicateStandIn({ apiKey: replicateKey });
  const bedrock = await startBedrockStandIn();
  // fal ends each request at its first status read (the step executor's first poll) with its
  // model's documented answer, and posts its signed webhook then.
  const fal = await startFalStandIn({ apiKey: falKey, pollsUntilDone: 1, answer: falAnswers(files.url) });
  const port = await freePort();
  const secretStore = await startSecretStore();
  const { ssm } = secretStore.clients();
  for (const [name, value] of [
    [replicateParameter, { apiKey: replicateKey, baseUrl: replicate.url }],
    [falParameter, { apiKey: falKey, baseUrl: fal.url }],
  ] as const) {
    await ssm.send(new PutParameterCommand({ Name: name, Type: 'SecureString', Value: JSON.stringify(value) }));
  }
  ssm.destroy();
  return {
    port,
    replicate,
    bedrock,
    fal,
    /** The emulated Secrets Manager and SSM, and each read the bundles made (never a value). */
    secretStore,
    /** A URL the stand-in's predictions answer with: a PNG on its file host. */
    outputUrl: `${files.url}/out.png`,
    environment: {
      AWS_ENDPOINT_URL_SSM: secretStore.endpoint,
      AWS_ENDPOINT_URL_SECRETS_MANAGER: secretStore.endpoint,
      // The SDK's own per-service endpoint variable: the bundles' Bedrock Runtime client calls the stand-in.
      AWS_ENDPOINT_URL_BEDROCK_RUNTIME: bedrock.url,
      // Where fal's webhook keys are published: the stand-in's, in place of fal's public JWKS.
      PROVIDER_FAL_JWKS_URL: fal.jwksUrl,
      PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
    },
    close: async () => {
      await secretStore.close();
      await replicate.close();
      await bedrock.close();
      await fal.close();
      await files.close();
    },
  };
};

export type RehearsalProviders = Awaited<ReturnType<typeof startRehearsalProviders>>;
