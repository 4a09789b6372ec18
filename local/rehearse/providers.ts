/**
 * The providers the rehearsal's model steps reach beyond the sandbox: Replicate's stand-in
 * (test/stand-ins/replicate.ts, Replicate's own protocol and webhook signatures) and its file host,
 * on loopback. The bundles find them through the documented settings, `PROVIDER_REPLICATE_API_KEY`
 * and `PROVIDER_REPLICATE_BASE_URL`, and announce their webhooks to the rehearsal's API front
 * (`PUBLIC_BASE_URL`, on a port chosen here for the front to take).
 */
import { createServer } from 'node:net';
import { encodePng, makeImage } from '../../functions/nodes/media/png.ts';
import { startFileServer } from '../../test/stand-ins/http.ts';
import { startReplicateStandIn } from '../../test/stand-ins/replicate.ts';

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
  return {
    port,
    replicate,
    /** A URL the stand-in's predictions answer with: a PNG on its file host. */
    outputUrl: `${files.url}/out.png`,
    environment: {
      PROVIDER_REPLICATE_API_KEY: apiKey,
      PROVIDER_REPLICATE_BASE_URL: replicate.url,
      PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
    },
    close: async () => {
      await replicate.close();
      await files.close();
    },
  };
};

export type RehearsalProviders = Awaited<ReturnType<typeof startRehearsalProviders>>;
