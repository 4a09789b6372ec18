import { createServer } from 'node:http';
import { listenLocal, maxInvokeBytes } from './api-gateway.ts';

/** A function the emulator serves: its handler, called with the invocation's payload. */
export type InvokedHandler = (event: unknown) => Promise<unknown>;

export interface LambdaEmulator {
  /** Lambda's endpoint for the SDK (`AWS_ENDPOINT_URL_LAMBDA`). */
  endpoint: string;
  stop(): Promise<void>;
}

const invocationPath = /^\/2015-03-31\/functions\/([^/]+)\/invocations$/;

/**
 * Lambda's Invoke API (RequestResponse) on loopback for the functions it is given, run in this
 * process: the answer is the handler's result as JSON; a handler that throws answers as Lambda does,
 * `X-Amz-Function-Error: Unhandled` and `{ errorType, errorMessage }`; an unknown name is a 404
 * `ResourceNotFoundException`. So the SDK's real path is used locally.
 *
 * Held to Lambda's 6 MB each way for a synchronous invocation (`maxInvokeBytes`, sources there): a
 * larger payload is refused before the handler runs (413 `RequestEntityTooLargeException`), and a
 * larger result fails the invocation after it ran, as the runtime cannot hand it back
 * (`Function.ResponseSizeTooLarge`).
 */
export const startLambdaEmulator = async (
  functions: Record<string, InvokedHandler>,
  options: { port?: number } = {},
): Promise<LambdaEmulator> => {
  const server = createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const match = invocationPath.exec(new URL(request.url ?? '/', 'http://localhost').pathname);
    const name = match
      ? decodeURIComponent(match[1] as string)
          .split(':')
          .at(-1)
      : undefined;
    const handler = name !== undefined && Object.hasOwn(functions, name) ? functions[name] : undefined;
    if (request.method !== 'POST' || !handler) {
      response.writeHead(404, { 'content-type': 'application/json', 'x-amzn-errortype': 'ResourceNotFoundException' });
      response.end(JSON.stringify({ Type: 'User', message: `Function not found: ${name ?? request.url}` }));
      return;
    }
    const payload = Buffer.concat(chunks);
    if (payload.length > maxInvokeBytes) {
      response.writeHead(413, {
        'content-type': 'application/json',
        'x-amzn-errortype': 'RequestEntityTooLargeException',
      });
      response.end(
        JSON.stringify({
          Type: 'User',
          message: `Request must be smaller than ${maxInvokeBytes} bytes for the InvokeFunction operation`,
        }),
      );
      return;
    }
    const text = payload.toString('utf8');
    try {
      const result = JSON.stringify((await handler(text === '' ? {} : (JSON.parse(text) as unknown))) ?? null);
      if (Buffer.byteLength(result) > maxInvokeBytes) {
        response.writeHead(200, { 'content-type': 'application/json', 'x-amz-function-error': 'Unhandled' });
        response.end(
          JSON.stringify({
            errorType: 'Function.ResponseSizeTooLarge',
            errorMessage: `Response payload size exceeded maximum allowed payload size (${maxInvokeBytes} bytes).`,
          }),
        );
        return;
      }
      response.writeHead(200, { 'content-type': 'application/json', 'x-amz-executed-version': '$LATEST' });
      response.end(result);
    } catch (error) {
      const { name: errorType, message } = error instanceof Error ? error : new Error(String(error));
      response.writeHead(200, { 'content-type': 'application/json', 'x-amz-function-error': 'Unhandled' });
      response.end(JSON.stringify({ errorType, errorMessage: message }));
    }
  });
  const listening = await listenLocal(server, { port: options.port ?? 0, host: '127.0.0.1' }, '');
  return { endpoint: listening.baseUrl, stop: listening.close };
};
