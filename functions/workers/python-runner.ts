import * as v from 'valibot';
import { type PythonAnswer, type PythonRun, pythonMaxTimeoutMs } from '../python/protocol.ts';
import { createPythonRunner, defaultPythonLimits, pythonRunnerOptionsFromEnv } from '../python/runner.ts';

const PythonRequestSchema = v.object({
  code: v.pipe(v.string(), v.minLength(1)),
  inputs: v.array(v.unknown()),
  timeoutMs: v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(pythonMaxTimeoutMs)),
  teamId: v.optional(v.pipe(v.string(), v.maxLength(64))),
});

/**
 * The PythonRunner function, invoked by the step executor (Lambda Invoke, RequestResponse) for each
 * PythonSandbox step. It holds no grant at all and has no network route out: the code it runs cannot
 * reach the service's data. Each run's Python lives in a child process of its own in the operating
 * system's box, loaded in full (its own hash seed) or, on a stage with `pythonSnapshots`, started
 * from a snapshot of the container's first load; no process serves two runs
 * (`functions/python/runner.ts`), so no run sees what another left.
 */
export const makeHandler =
  (run: PythonRun) =>
  async (event: unknown): Promise<PythonAnswer> =>
    run(v.parse(PythonRequestSchema, event));

export const handler = makeHandler(createPythonRunner(defaultPythonLimits, pythonRunnerOptionsFromEnv()).run);
