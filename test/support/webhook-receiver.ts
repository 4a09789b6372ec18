/**
 * A webhook receiver on loopback over https (test/fixtures' self-signed certificate): answers with
 * the statuses queued in `replies` (then 200) and keeps every request. Used by the webhook tests
 * and by the cost bench.
 */
import { readFileSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { createServer } from 'node:https';

/** The receiver's certificate: the webhook worker's `ca` when it calls the receiver. */
export const receiverCa = readFileSync(new URL('../fixtures/receiver-cert.pem', import.meta.url));

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

export const startReceiver = async (replies: number[] = [], onReceived?: (received: Received) => void) => {
  const received: Received[] = [];
  const server = createServer(
    { key: readFileSync(new URL('../fixtures/receiver-key.pem', import.meta.url)), cert: receiverCa },
    (req, res) => {
      let body = '';
      req.on('data', (c) => {
        body += c;
      });
      req.on('end', () => {
        const request = { headers: req.headers, body };
        received.push(request);
        const status = replies.shift() ?? 200;
        res.writeHead(status, status === 302 ? { location: 'https://127.0.0.1:1/elsewhere' } : {});
        res.end('ok');
        onReceived?.(request);
      });
    },
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `https://127.0.0.1:${port}/hook`,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
};
