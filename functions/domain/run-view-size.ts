/**
 * The size of a run's view (GET /runs/{jobId}, the cancel's answer, the run-finished webhook's
 * body), bounded by construction so that the function's answer always fits Lambda's invoke result
 * (our design): past it API Gateway would answer 500 instead of the run.
 *
 * What a view holds, at most:
 * - its steps: at most `maxStepsPerWorkflow` (500), each a node id of at most 64 safe characters, a
 *   catalogue type, a status, and an error shown up to `maxStepErrorChars` characters;
 * - its `output`: the final steps' outputs in the workflow's order, taken while their bytes stay
 *   within `outputPageBytes`; the outputs left over are named by `output_next`, a cursor for the
 *   next page. A page always holds one output at least, so paging always moves on: one that alone
 *   is over the budget is shown with its `result` withheld (its lineage stays: a canvas is at most
 *   256 KiB, so its model names, shown twice, stay far below the budget);
 * - a few fixed fields (the job id, status, progress, the cursor) and the answer's headers.
 *
 * Bytes are counted as Lambda counts them: the function's result is JSON whose `body` is the view's
 * JSON as a string, so each character of the view is escaped a second time (`"` takes 2 bytes in
 * the view and 4 in the result, a control character 6 and 7). test/run-view-size.test.ts adds up
 * the worst case of every part against `invokeResultBytes`.
 */

/**
 * Lambda's limit on a synchronous invocation's result: "6 MB"
 * (https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html and
 * https://docs.aws.amazon.com/lambda/latest/dg/API_Invoke.html, read 2026-11-27), read
 * as the smaller decimal megabytes, below the 6 MiB (6291456 bytes) Lambda's own refusal names.
 */
export const invokeResultBytes = 6_000_000;

/** The bytes of one page of outputs in the function's result; the rest of the limit is the steps'. */
export const outputPageBytes = 4 * 1024 * 1024;

/**
 * The characters of a failed step's error a view shows (the rest is cut, marked `…`). Every error
 * the service writes is shorter (a provider's text is cut at 300 characters); this is what keeps
 * 500 steps' worth of errors inside the limit whatever a future message holds.
 */
export const maxStepErrorChars = 400;

/** The bytes `value`'s JSON takes inside the function's result, where it is a string's content. */
export const resultBytes = (value: unknown): number =>
  Buffer.byteLength(JSON.stringify(JSON.stringify(value) ?? 'null')) - 2;

/** A step's error as a view shows it: whole, or its first `maxStepErrorChars` characters and `…`. */
export const shownStepError = (error: string): string => {
  if (error.length <= maxStepErrorChars) return error;
  const cut = error.slice(0, maxStepErrorChars);
  // Never half a surrogate pair: the cut text stays well-formed.
  const last = cut.charCodeAt(cut.length - 1);
  return `${last >= 0xd800 && last <= 0xdbff ? cut.slice(0, -1) : cut}…`;
};

/** An output too large to answer even alone: its `result` withheld, and said so. */
export const withheldOutput = <T extends { result: unknown }>(output: T): T & { result_withheld: true } => ({
  ...output,
  result: null,
  result_withheld: true,
});

/**
 * The page of `outputs` (the outputs from a page's start, in order): each next one while the
 * page's bytes, commas included, stay within `budget`, and `rest`, the index of the first left
 * over (null when none is). A page is never empty: a first output that alone is over `budget` is
 * taken `withheldOutput` (the service's own steps never make one: a step item holds 400 KB, at
 * most 2.9 MB here even if every character were escaped).
 */
export const outputPage = <T extends { result: unknown }>(
  outputs: readonly T[],
  budget: number = outputPageBytes,
): { output: (T | (T & { result_withheld: true }))[]; rest: number | null } => {
  const page: (T | (T & { result_withheld: true }))[] = [];
  let bytes = 0;
  for (const output of outputs) {
    const next = bytes + resultBytes(output) + (page.length > 0 ? 1 : 0);
    if (next > budget) {
      if (page.length > 0) break;
      const withheld = withheldOutput(output);
      page.push(withheld);
      bytes = resultBytes(withheld);
      continue;
    }
    page.push(output);
    bytes = next;
  }
  return { output: page, rest: page.length < outputs.length ? page.length : null };
};
