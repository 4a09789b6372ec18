/**
 * The kinds of value that travel along an edge, and which output kind may feed which input kind.
 */

export const valueKinds = [
  'text',
  'number',
  'json',
  'image',
  'audio',
  'video',
  'mesh',
  'file',
  'embedding',
  'any',
  'boolean',
  'list',
] as const;
export type ValueKind = (typeof valueKinds)[number];

/**
 * Conversions allowed beyond "same kind" and "either side is `any`", from an output kind to the
 * input kinds it may also feed. Each is lossless or checked when the step runs:
 * - number, boolean, json, list → text: written out as text (JSON for json and list).
 * - text → json: parsed when the step runs; a text that is not JSON fails that step, not the
 *   workflow. Allowed because an LLM answering in JSON is the common way into a JsonExtractor.
 * - number, boolean, list, embedding → json: they are JSON values already.
 * - embedding → list: a vector is a list of numbers.
 * - image, audio, video, mesh → file: every media value is a file, so delivery steps take them.
 * Never: a file or media kind from text or json (a URL is not the file), json → list (shape unknown).
 */
const coercions: Readonly<Record<ValueKind, readonly ValueKind[]>> = {
  text: ['json'],
  number: ['text', 'json'],
  boolean: ['text', 'json'],
  json: ['text'],
  list: ['text', 'json'],
  embedding: ['json', 'list'],
  image: ['file'],
  audio: ['file'],
  video: ['file'],
  mesh: ['file'],
  file: [],
  any: [],
};

/** Whether an output of kind `from` may be connected to an input of kind `to`. */
export const canConnect = (from: ValueKind, to: ValueKind): boolean =>
  from === to || from === 'any' || to === 'any' || coercions[from].includes(to);
