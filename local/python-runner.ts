/**
 * The PythonRunner as `npm start` serves it: the deployed function's handler over a runner that runs
 * several steps at once, each in its own process, so one team's long Python steps never hold another
 * team's behind them (a Lambda container runs one invocation at a time; Lambda runs many containers).
 */
import { createPythonRunner, defaultPythonLimits, pythonRunnerOptionsFromEnv } from '../functions/python/runner.ts';
import { makeHandler } from '../functions/workers/python-runner.ts';

/** `PYTHON_LOCAL_RUNS`: Python steps run at once locally (1 to 16). */
export const localPythonRunsVariable = 'PYTHON_LOCAL_RUNS';
export const defaultLocalPythonRuns = 3;

export const localPythonRuns = (env: NodeJS.ProcessEnv = process.env): number => {
  const raw = env[localPythonRunsVariable];
  if (raw === undefined || raw === '') return defaultLocalPythonRuns;
  const runs = Number(raw);
  if (!Number.isInteger(runs) || runs < 1 || runs > 16)
    throw new Error(`${localPythonRunsVariable} must be a whole number from 1 to 16, not ${JSON.stringify(raw)}`);
  return runs;
};

export const startLocalPythonRunner = (env: NodeJS.ProcessEnv = process.env) => {
  const runner = createPythonRunner(defaultPythonLimits, {
    ...pythonRunnerOptionsFromEnv(env),
    concurrency: localPythonRuns(env),
  });
  return { runner, handler: makeHandler(runner.run) };
};
