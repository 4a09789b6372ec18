/** A plain HTTP server on loopback for the tests of one describe (or file), for what a stand-in does not speak. */
import { once } from 'node:events';
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll } from 'vitest';

/** Listens before the tests (`url`, `port` are set then) and closes after them. */
export const loopbackServer = (listener: RequestListener) => {
  let server: Server | undefined;
  const started = { url: '', port: 0 };
  beforeAll(async () => {
    server = createServer(listener);
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    started.port = (server.address() as AddressInfo).port;
    started.url = `http://127.0.0.1:${started.port}`;
  });
  afterAll(() => {
    server?.closeAllConnections();
    server?.close();
  });
  return started;
};
