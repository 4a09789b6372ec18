/** JSONPath (RFC 9535) through `jsonpath-rfc9535`, which evaluates filters itself (no eval). */
import { query } from 'jsonpath-rfc9535';
import parse, { type JsonPathQuery } from 'jsonpath-rfc9535/parser';

export class JsonPathError extends Error {
  override readonly name = 'JsonPathError';
}

const parseQuery = (path: string): JsonPathQuery => {
  try {
    return parse(path);
  } catch (error) {
    throw new JsonPathError(`Invalid JSONPath ${JSON.stringify(path)}: ${(error as Error).message}`);
  }
};

/** A singular query (RFC 9535 2.3.5.1: only name and index selectors) selects at most one value. */
const isSingularQuery = (ast: JsonPathQuery): boolean =>
  ast.segments.every(
    (segment) =>
      segment.type === 'ChildSegment' &&
      (segment.node.type === 'MemberNameShorthand' ||
        (segment.node.type === 'BracketedSelection' &&
          segment.node.selectors.length === 1 &&
          (segment.node.selectors[0]?.type === 'NameSelector' || segment.node.selectors[0]?.type === 'IndexSelector'))),
  );

/**
 * The value(s) `path` selects in `document`: for a singular query (`$.a[0].b`) the value or null
 * when absent; otherwise the list of matches (possibly empty).
 */
export const selectJsonPath = (document: unknown, path: string): unknown => {
  const ast = parseQuery(path);
  // JSON round trip: only JSON values reach the library (no undefined, functions, class instances).
  const json = JSON.parse(JSON.stringify(document ?? null));
  const matches = query(json, path);
  return isSingularQuery(ast) ? (matches[0] ?? null) : matches;
};
