import { distance } from 'fastest-levenshtein';

/**
 * The name among `known` a caller most likely meant by `given`: the nearest by edit distance
 * (Levenshtein, letter case ignored), when it is near enough to be a typo: at most 2 edits (1 for
 * a name of 1 or 2 letters), so an unrelated word suggests nothing. Undefined otherwise; ties go
 * to the earlier name.
 */
export const didYouMean = (given: string, known: readonly string[]): string | undefined => {
  const lower = given.toLowerCase();
  let best: { name: string; edits: number } | undefined;
  for (const name of known) {
    const edits = distance(lower, name.toLowerCase());
    if (!best || edits < best.edits) best = { name, edits };
  }
  if (!best || best.name === given) return undefined;
  return best.edits <= (given.length <= 2 ? 1 : 2) ? best.name : undefined;
};
