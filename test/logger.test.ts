/**
 * The service logger's scopes without I/O (functions/observability/logger.ts): a worker
 * invocation's and a record's own child loggers, and the `cold_start` their lines carry.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { lambdaContext } from '../local/lambda-context.ts';

type Line = Record<string, unknown>;

/** A fresh copy of the logger module, loaded as in a new Lambda environment of `initializationType`. */
const freshLogger = async (initializationType: string) => {
  vi.stubEnv('AWS_LAMBDA_INITIALIZATION_TYPE', initializationType);
  vi.stubEnv('POWERTOOLS_LOG_LEVEL', 'INFO');
  vi.resetModules();
  return import('../functions/observability/logger.ts');
};

const capture = () => {
  const lines: Line[] = [];
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
    lines.push(
      ...String(chunk)
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Line),
    );
    return true;
  });
  return lines;
};

afterEach(() => {
  vi.restoreAllMocks();
  vi.unstubAllEnvs();
});

describe('the service logger', () => {
  it("says cold_start true on the first invocation's lines only, its records' lines included", async () => {
    const { logger, withLambdaContext, withRecordKeys } = await freshLogger('on-demand');
    const lines = capture();
    const handler = withLambdaContext(async (records: string[]) => {
      logger.info('invocation');
      await Promise.all(records.map((jobId) => withRecordKeys({ jobId }, async () => logger.info('record'))));
    });
    await handler(['job-1', 'job-2'], lambdaContext('worker', 1000, 'first'));
    await handler(['job-3'], lambdaContext('worker', 1000, 'second'));
    expect(lines.map((l) => [l.message, l.function_request_id, l.cold_start, l.jobId])).toEqual([
      ['invocation', 'first', true, undefined],
      ['record', 'first', true, 'job-1'],
      ['record', 'first', true, 'job-2'],
      ['invocation', 'second', false, undefined],
      ['record', 'second', false, 'job-3'],
    ]);
  });

  it('keeps keys appended in an invocation or a record to it', async () => {
    const { logger, withLambdaContext, withRecordKeys } = await freshLogger('on-demand');
    const lines = capture();
    const handler = withLambdaContext(async (teamId?: string) => {
      if (teamId) logger.appendKeys({ teamId });
      await withRecordKeys({ jobId: 'job-1' }, async () => {
        logger.appendKeys({ attempt: 2 });
        logger.info('record');
      });
      logger.info('after the record');
    });
    await handler('team-1', lambdaContext('worker', 1000));
    await handler(undefined, lambdaContext('worker', 1000));
    logger.info('outside');
    expect(lines.map((l) => [l.message, l.teamId, l.jobId, l.attempt])).toEqual([
      ['record', 'team-1', 'job-1', 2],
      ['after the record', 'team-1', undefined, undefined],
      ['record', undefined, 'job-1', 2],
      ['after the record', undefined, undefined, undefined],
      ['outside', undefined, undefined, undefined],
    ]);
  });
});
