import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Starts `server` on loopback (`port`, else a free one) and answers its address and a stop that
 * drops open connections first, so a stop never waits on a client's keep-alive.
 */
export const listenOnLoopback = async (
  server: Server,
  port?: number,
): Promise<{ endpoint: string; stop(): Promise<void> }> => {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port: bound } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${bound}`,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
};
