/**
 * API keys (APIKEY#<hash>, APIKEYID#<keyId>). One family of the stored items: see item.ts for how
 * every item is read and written.
 */
import * as v from 'valibot';
import { allScopes } from '../../../platform/routes.ts';
import { storedItem } from './item.ts';

/** What the service knows about a key; never the secret itself. GSI1 projects all of it. */
export const ApiKeyItemSchema = v.object({
  keyId: v.string(),
  teamId: v.string(),
  /** Empty means all scopes (spec section 5). */
  scopes: v.optional(v.array(v.picklist(allScopes)), () => []),
  /** Empty means every workflow of the team. */
  workflowIds: v.optional(v.array(v.string()), () => []),
  /** Monthly credit cap in hundredths, or null for none. */
  monthlyCapHundredths: v.nullish(v.number(), null),
  expiresAt: v.nullish(v.string(), null),
  revokedAt: v.nullish(v.string(), null),
  /** Requests per minute, or null for the default. */
  rateLimitPerMinute: v.nullish(v.number(), null),
  hint: v.string(),
  createdAt: v.string(),
});
export type ApiKeyItem = v.InferOutput<typeof ApiKeyItemSchema>;
export const storedApiKey = storedItem(ApiKeyItemSchema);

/** The pointer from a key's public id to the hash its item is stored under. */
export const ApiKeyIdItemSchema = v.object({ secretHash: v.string() });
/** The pointer, with its team for operators. */
export const storedApiKeyId = storedItem(ApiKeyIdItemSchema, ['teamId']);
