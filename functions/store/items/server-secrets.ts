/**
 * The service's own signing keys (functions/store/server-secrets.ts). One family of the stored
 * items: see item.ts for how every item is read and written.
 */
import * as v from 'valibot';
import { storedItem } from './item.ts';

/** A signing key of the service's own (list cursors, file links; functions/store/server-secrets.ts): 32 random bytes, base64. */
export const ServerSecretItemSchema = v.object({ secret: v.string() });
export const storedServerSecret = storedItem(ServerSecretItemSchema);
