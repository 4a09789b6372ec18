import type { Deps } from '../../deps.ts';
import { logger } from '../../observability/logger.ts';
import { type Attempt, markStepStarted, type StepRun } from '../../store/run/index.ts';

/**
 * How long an unclaimed step's node runs before its item is written `processing`. A node that
 * answers sooner (a prompt template, a sum) writes its item once, at its end, as before; one that
 * takes longer (Python, an HTTP call, a media operation) reads `processing` while it runs, as a
 * model step does from its claim, at the cost of one write.
 */
export const startMarkDelayMs = 200;

/**
 * Runs a step's node (`execute`), marking its item `processing` if it is still running after
 * `startMarkDelayMs`, and then also writing what `whileSlow` writes (an inline chain's carried
 * counts, functions/app/step/settle-step.ts). A claimed step (`attempt` set) is `processing`
 * already: nothing more is written. The mark is only what callers read, so its failure is logged,
 * never the step's; so is `whileSlow`'s (what it writes is written later instead).
 */
export const runMarkingStart = async <T>(
  deps: Deps,
  run: StepRun,
  nodeId: string,
  attempt: Attempt,
  execute: () => Promise<T>,
  whileSlow?: () => Promise<unknown>,
): Promise<T> => {
  if (attempt !== null) return execute();
  let marking: Promise<unknown> | undefined;
  const timer = setTimeout(() => {
    marking = Promise.all([
      markStepStarted(deps, run, nodeId).catch((error: unknown) =>
        logger.warn('step start mark not written', { nodeId, error }),
      ),
      whileSlow?.().catch((error: unknown) => logger.warn('carried step counts not written yet', { nodeId, error })),
    ]);
  }, startMarkDelayMs);
  try {
    return await execute();
  } finally {
    clearTimeout(timer);
    // Written before the step's end, which would otherwise refuse it (the mark needs no item).
    await marking;
  }
};
