/**
 * The providers the rehearsal's model steps reach beyond the sandbox: Replicate's stand-in
 * (test/stand-ins/replicate.ts, Replicate's own protocol and webhook signatures) and its file host,
 * on loopback. Replicate is on as a deployed stage turns it on: the stage's `-c providers`
 * (`rehearsalContext`, synthesized into the template's `PROVIDER_SECRETS`) names an SSM SecureString
 * parameter, put here into the secret-store emulator (local/secret-store.ts) with the real SDK, so
 * the step executor's and the webhook route's bundles read their credentials (the API key, and the
 * stand-in's address as its base URL) with GetParameter WithDecryption, through
 * `AWS_ENDPOINT_URL_SSM`. They announce their webhooks to the rehearsal's API front
 * (`PUBLIC_BASE_URL`, on a port chosen here for the front to take).
 */
import { createServer } from 'node:net';
import { PutParameterCommand } from '@aws-sdk/client-ssm';
import { encodePng, makeImage } from '../../functions/nodes/media/png.ts';
import { contextKeys } from '../../lib/stages.ts';
import { startFileServer } from '../../test/stand-ins/http.ts';
import { startReplicateStandIn } from '../../test/stand-ins/replicate.ts';
import { startSecretStore } from '../secret-store.ts';

/** Where the rehearsal's stage keeps Replicate's credentials: an SSM SecureString parameter. */
export const replicateParameter = '/workflow-run-api/rehearsal/providers/replicate';

/** The stage context the rehearsal synthesizes with: Replicate on, its credentials in SSM. */
export const rehearsalContext = { [contextKeys.providers]: `replicate:ssm:${replicateParameter}` } as const;

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

export const startRehearsalProviders = async () => {
  const apiKey = `r8_rehearsal_${Math.random().toString(36).slice(2)}`;
  const replicate = await startReplicateStandIn({ apiKey });
  const files = await startFileServer({
    '/out.png': { body: encodePng(makeImage(16, 16, (x, y) => [x * 16, y * 16, 128, 255])), contentType: 'image/png' },
  });
  const port = await freePort();
  const secretStore = await startSecretStore();
  const { ssm } = secretStore.clients();
  await ssm.send(
    new PutParameterCommand({
      Name: replicateParameter,
      Type: 'SecureString',
      Value: JSON.stringify({ apiKey, baseUrl: replicate.url }),
    }),
  );
  ssm.destroy();
  return {
    port,
    replicate,
    /** The emulated Secrets Manager and SSM, and each read the bundles made (never a value). */
    secretStore,
    /** A URL the stand-in's predictions answer with: a PNG on its file host. */
    outputUrl: `${files.url}/out.png`,
    environment: {
      AWS_ENDPOINT_URL_SSM: secretStore.endpoint,
      AWS_ENDPOINT_URL_SECRETS_MANAGER: secretStore.endpoint,
      PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
    },
    close: async () => {
      await secretStore.close();
      await replicate.close();
      await files.close();
    },
  };
};

export type RehearsalProviders = Awaited<ReturnType<typeof startRehearsalProviders>>;
