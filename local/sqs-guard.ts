/**
 * A proxy in front of fauxqs that holds SQS requests to the limits of SQS that fauxqs (2.4.1) does
 * not keep, and forwards everything else (its S3 included) unchanged. SendMessage's own
 * `DelaySeconds` is 0 to 900 seconds on SQS (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessage.html,
 * read 2026-12-07); fauxqs checks only a queue's attribute, and takes any delay on a message. A
 * delay outside is refused with SQS's InvalidParameterValue (400), as its JSON protocol answers it:
 * `__type` and the `x-amzn-query-error` header the SDK reads the code from.
 */
import { createServer, request as httpRequest } from 'node:http';
import { listenOnLoopback } from './loopback-server.ts';

export interface SqsGuard {
  endpoint: string;
  stop(): Promise<void>;
}

/** SQS's longest delay of a message, in seconds. */
export const maxMessageDelaySeconds = 900;

/** Why SQS would refuse this JSON-protocol request, or undefined. */
const refusal = (target: string | undefined, body: string): string | undefined => {
  if (target !== 'AmazonSQS.SendMessage') return undefined;
  let delay: unknown;
  try {
    delay = (JSON.parse(body) as { DelaySeconds?: unknown }).DelaySeconds;
  } catch {
    return undefined;
  }
  if (delay === undefined) return undefined;
  if (typeof delay === 'number' && Number.isInteger(delay) && delay >= 0 && delay <= maxMessageDelaySeconds) {
    return undefined;
  }
  return `Value ${String(delay)} for parameter DelaySeconds is invalid. Reason: must be >= 0 and <= ${maxMessageDelaySeconds}.`;
};

/** Starts the guard on loopback in front of `upstream` (fauxqs). */
export const startSqsGuard = async (options: { upstream: string; port?: number }): Promise<SqsGuard> => {
  const upstream = new URL(options.upstream);
  const server = createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const target = request.headers['x-amz-target'];
    const refused = refusal(typeof target === 'string' ? target : undefined, body.toString('utf8'));
    if (refused) {
      response.writeHead(400, {
        'content-type': 'application/x-amz-json-1.0',
        'x-amzn-query-error': 'InvalidParameterValue;Sender',
      });
      response.end(JSON.stringify({ __type: 'com.amazonaws.sqs#InvalidParameterValue', message: refused }));
      return;
    }
    const outgoing = httpRequest(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: request.method,
        path: request.url,
        headers: { ...request.headers, host: upstream.host },
      },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      },
    );
    outgoing.on('error', (error) => {
      if (!response.headersSent) response.writeHead(502, { 'content-type': 'text/plain' });
      response.end(`sqs-guard: upstream failed: ${error.message}`);
    });
    outgoing.end(body);
  });
  return listenOnLoopback(server, options.port);
};
