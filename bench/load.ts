import { createRequire } from 'node:module';

/** The slice of autocannon's (untyped, CommonJS) API the bench uses. */
interface AutocannonOptions {
  url: string;
  connections: number;
  duration: number;
  headers?: Record<string, string>;
  overallRate?: number;
  timeout?: number;
}
interface LoadOptions extends AutocannonOptions {
  /** The status a response should have (a redirect's 302); any 2xx when unset. */
  expectedStatus?: number;
}
interface AutocannonResult {
  errors: number;
  timeouts: number;
  duration: number;
}
interface AutocannonInstance {
  on(
    event: 'response',
    listener: (client: unknown, statusCode: number, resBytes: number, responseTime: number) => void,
  ): void;
  stop(): void;
}
type Autocannon = (
  options: AutocannonOptions,
  callback: (error: Error | null, result: AutocannonResult) => void,
) => AutocannonInstance;

const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

export interface LoadResult {
  /** Response times of 2xx (or expected) responses in ms, full float precision (autocannon's histogram keeps whole ms). */
  latencies: number[];
  /** Responses that were not 2xx (or not the expected status). */
  non2xx: number;
  statusCounts: Record<number, number>;
  /** Connection errors and timeouts. */
  errors: number;
  /** Wall time of the run in ms. */
  elapsedMs: number;
}

/** Drives `url` with autocannon over loopback for a fixed duration; every response time is kept. */
export const runLoad = ({ expectedStatus, ...options }: LoadOptions): Promise<LoadResult> =>
  new Promise((resolve, reject) => {
    const expected = (status: number) => (expectedStatus ? status === expectedStatus : status >= 200 && status < 300);
    const latencies: number[] = [];
    const statusCounts: Record<number, number> = {};
    let non2xx = 0;
    const started = performance.now();
    const instance = autocannon({ timeout: 10, ...options }, (error, result) => {
      if (error) return reject(error);
      resolve({
        latencies,
        non2xx,
        statusCounts,
        errors: result.errors + result.timeouts,
        elapsedMs: performance.now() - started,
      });
    });
    instance.on('response', (_client, statusCode, _bytes, responseTime) => {
      statusCounts[statusCode] = (statusCounts[statusCode] ?? 0) + 1;
      if (expected(statusCode)) latencies.push(responseTime);
      else non2xx++;
    });
  });
