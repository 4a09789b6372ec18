/**
 * A run's `metadata` and `tags` (our design): the caller's own ids on a run, given at its
 * start (now or deferred), echoed wherever the run is shown, and `tags` filter GET /runs.
 *
 * - `metadata`: at most 16 pairs; a key 1 to 64 characters of a tag's set (below), a value a string
 *   of at most 512 with no control character (C0, DEL or C1: no NUL, CR or LF to forge a line of a
 *   log, a header or a CSV export with).
 * - `tags`: at most 5, each 1 to 64 characters of letters, digits and `_ - . : @ /` (no spaces, so a
 *   tag reads the same in a query string); case counts (`Order-1` and `order-1` are two tags), and a
 *   tag given twice is refused rather than dropped, so what is echoed is what was sent.
 *
 * Lengths count UTF-16 code units (JavaScript's `length`): a character outside the Basic
 * Multilingual Plane (an emoji) counts 2. A tag is ASCII, so this concerns metadata only.
 * Each limit's message names it; the HTTP edge prefixes the field (`Invalid request body: tags: …`).
 */
import * as v from 'valibot';
import { notArray } from './common.ts';

export const runTagLimits = {
  metadataPairs: 16,
  metadataKeyLength: 64,
  metadataValueLength: 512,
  tags: 5,
  tagLength: 64,
} as const;

/** The characters a tag may hold. */
const tagPattern = /^[A-Za-z0-9_.:@/-]+$/;

export const tagCharacters = 'letters, digits and _ - . : @ /';

/** A string with no control character (Unicode's Cc: C0, DEL and C1), NUL, CR and LF among them. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what it refuses.
const noControlCharacters = /^[^\u0000-\u001f\u007f-\u009f]*$/;

export const tagMessages = {
  tagLength: `a tag is 1 to ${runTagLimits.tagLength} characters`,
  tagCharacters: `a tag holds only ${tagCharacters}`,
  tooManyTags: `at most ${runTagLimits.tags} tags`,
  duplicateTag: 'a tag is given at most once',
  metadataKeyLength: `a metadata key is 1 to ${runTagLimits.metadataKeyLength} characters`,
  metadataValueLength: `a metadata value is at most ${runTagLimits.metadataValueLength} characters`,
  metadataKeyCharacters: `a metadata key holds only ${tagCharacters}`,
  metadataValueCharacters: 'a metadata value holds no control character (U+0000 to U+001F, U+007F to U+009F)',
  tooManyPairs: `at most ${runTagLimits.metadataPairs} metadata pairs`,
} as const;

/** One tag; also the `tag` of GET /runs. */
export const TagSchema = v.pipe(
  v.string(),
  v.minLength(1, tagMessages.tagLength),
  v.maxLength(runTagLimits.tagLength, tagMessages.tagLength),
  v.regex(tagPattern, tagMessages.tagCharacters),
  v.description(`1 to ${runTagLimits.tagLength} characters: ${tagCharacters}. Case counts.`),
);

export const TagsSchema = v.pipe(
  v.array(TagSchema),
  v.maxLength(runTagLimits.tags, tagMessages.tooManyTags),
  v.check((tags) => new Set(tags).size === tags.length, tagMessages.duplicateTag),
  // The check above, for the OpenAPI document.
  v.metadata({ uniqueItems: true }),
  v.description(`At most ${runTagLimits.tags}, each at most once. \`GET /runs?tag=\` lists the runs with one.`),
);

export const MetadataSchema = v.pipe(
  notArray(
    v.record(
      v.pipe(
        v.string(),
        v.minLength(1, tagMessages.metadataKeyLength),
        v.maxLength(runTagLimits.metadataKeyLength, tagMessages.metadataKeyLength),
        v.regex(tagPattern, tagMessages.metadataKeyCharacters),
      ),
      v.pipe(
        v.string(),
        v.maxLength(runTagLimits.metadataValueLength, tagMessages.metadataValueLength),
        v.regex(noControlCharacters, tagMessages.metadataValueCharacters),
      ),
    ),
  ),
  v.maxEntries(runTagLimits.metadataPairs, tagMessages.tooManyPairs),
  v.description(
    `Your own string pairs (at most ${runTagLimits.metadataPairs}; a key 1 to ${runTagLimits.metadataKeyLength} ` +
      `characters of ${tagCharacters}; a value at most ${runTagLimits.metadataValueLength} characters, none a ` +
      'control character: U+0000 to U+001F, U+007F to U+009F), echoed wherever the run is shown.',
  ),
);

export type RunMetadata = v.InferOutput<typeof MetadataSchema>;
export type RunTags = v.InferOutput<typeof TagsSchema>;

/** What a run carries of them: each present only when the run was started with at least one. */
export interface RunLabels {
  metadata?: RunMetadata;
  tags?: RunTags;
}

/**
 * The labels as stored and shown: an empty `metadata` or `tags` is none, so a run started without
 * them (or with `{}` / `[]`) reads exactly as the contract's Run.
 */
export const runLabels = (labels: { metadata?: RunMetadata | undefined; tags?: RunTags | undefined }): RunLabels => ({
  ...(labels.metadata && Object.keys(labels.metadata).length > 0 ? { metadata: labels.metadata } : {}),
  ...(labels.tags && labels.tags.length > 0 ? { tags: labels.tags } : {}),
});
